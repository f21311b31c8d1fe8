package demo

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server"
)

// batchStore is all the verification reads of the server's stored data:
// stream metadata and one batch at a time. It has no Records, which
// returns a whole stream at once: the default demo stores 1.2 million
// records of 200 B, and holding them all took the demo's parent process
// to a peak RSS of 787 MiB.
type batchStore interface {
	Streams(ctx context.Context) ([]server.StreamMeta, error)
	Stream(ctx context.Context, id string) (server.StreamMeta, error)
	server.BatchReader
}

// readProgress counts the records read back, for the progress line.
type readProgress struct {
	read, total atomic.Int64
}

// scanStream reads stream m back one batch at a time and calls fn with
// each, in offset order. A stream's batches are dense from offset 0 to its
// watermark (the Store's Append contract), so reading those offsets reads
// them all; a batch missing among them is an error, and the records read
// must add up to the count the store keeps, so that nothing stored outside
// that range goes unnoticed either.
func scanStream(ctx context.Context, st batchStore, m server.StreamMeta, p *readProgress, fn func(server.Batch) error) error {
	var n int64
	for off := int64(0); off <= m.Watermark; off++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := st.Batch(ctx, m.ID, off)
		if err != nil {
			return fmt.Errorf("reading stream %s back at offset %d: %w", m.ID, off, err)
		}
		if b.Offset != off {
			return fmt.Errorf("reading stream %s back: asked for offset %d, got %d", m.ID, off, b.Offset)
		}
		n += int64(len(b.Records))
		p.read.Add(int64(len(b.Records)))
		if err := fn(b); err != nil {
			return err
		}
	}
	if n != m.Records {
		return fmt.Errorf("stream %s: %d records read back from offsets 0 to %d, but the store counts %d", m.ID, n, m.Watermark, m.Records)
	}
	return nil
}

// verifyProgress prints a progress line about every second while the
// stored records are read back, until stopped.
func (d *demo) verifyProgress(p *readProgress) (stop func()) {
	return cli.Every(time.Second, func() {
		if total := p.total.Load(); total > 0 {
			fmt.Fprintf(d.out, "  %5.1fs  verifying: %d/%d stored records read back\n",
				time.Since(d.start).Seconds(), p.read.Load(), total)
		}
	})
}
