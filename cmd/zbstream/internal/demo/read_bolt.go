package demo

import (
	"context"
	"fmt"

	"github.com/zbstream/zbstream/server"
)

// boltReadWindow is how many bytes of records the verification reads
// through one opening of the server's bolt store before it reopens it.
const boltReadWindow = 32 << 20

// boltBatches reads the server's bolt store, once the server has stopped,
// one batch at a time (a batchStore), and closes and reopens the store
// after every window bytes of records read. Reading batch by batch bounds
// the heap, but not the RSS: bbolt reads through a shared memory map of
// its whole file, and every page read stays resident in this process until
// the map is closed, so one opening read to the end would make the RSS as
// large as the file: over the default demo's 255 MB file, the
// verification alone peaked at 275 MiB of RSS through one opening, 75 MiB
// with this window. Each opening commits OpenBoltStore's bucket check (a
// meta page and a sync): eight of them for the default demo.
type boltBatches struct {
	dir    string
	window int64
	st     *server.BoltStore
	read   int64 // bytes of records read through st
	opens  int
}

func openBoltBatches(dir string, window int64) (*boltBatches, error) {
	b := &boltBatches{dir: dir, window: window}
	if _, err := b.store(); err != nil {
		return nil, err
	}
	return b, nil
}

// store returns the open store, opening it if it is closed.
func (b *boltBatches) store() (*server.BoltStore, error) {
	if b.st != nil {
		return b.st, nil
	}
	st, err := server.OpenBoltStore(b.dir)
	if err != nil {
		return nil, fmt.Errorf("reading the server's data back: %w", err)
	}
	b.st, b.read = st, 0
	b.opens++
	return st, nil
}

// Batch implements server.BatchReader, reopening the store first when the
// window is read.
func (b *boltBatches) Batch(ctx context.Context, id string, offset int64) (server.Batch, error) {
	if b.read >= b.window {
		if err := b.Close(); err != nil {
			return server.Batch{}, err
		}
	}
	st, err := b.store()
	if err != nil {
		return server.Batch{}, err
	}
	batch, err := st.Batch(ctx, id, offset)
	for _, r := range batch.Records {
		b.read += int64(len(r))
	}
	return batch, err
}

func (b *boltBatches) Streams(ctx context.Context) ([]server.StreamMeta, error) {
	st, err := b.store()
	if err != nil {
		return nil, err
	}
	return st.Streams(ctx)
}

func (b *boltBatches) Stream(ctx context.Context, id string) (server.StreamMeta, error) {
	st, err := b.store()
	if err != nil {
		return server.StreamMeta{}, err
	}
	return st.Stream(ctx, id)
}

// Close closes the store if it is open; the next read opens it again.
func (b *boltBatches) Close() error {
	st := b.st
	b.st = nil
	if st == nil {
		return nil
	}
	return st.Close()
}
