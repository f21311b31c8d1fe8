package ingest

import (
	"context"
	"encoding/hex"
	"io"
	"slices"

	"github.com/zbstream/zbstream/record"
)

// batcher groups records into calls, deterministically: a call takes
// records in file order until it holds maxRecords of them, or the next one
// would take its size as sent (each record framed as in a batch) over
// maxBytes, or the records handed out so far reach a cut; a call always
// holds at least one record. Given the file's content, the two limits and
// the cuts, call k is always the same records, so the offset of a
// persistent stream (call k is offset k) names its place in the file.
//
// A cut is made where the server refused a call for good (see pin):
// the calls before it stay as they are on the server, and those after it
// are made afresh from a corrected file. A cut at a call's end moves no
// call: batching is greedy from a call's first record.
type batcher struct {
	r          recordReader
	maxRecords int
	maxBytes   int64
	cuts       []int64
	records    int64 // records in the calls returned
	pending    []byte
	pendingAt  place
	err        error

	first, last place // of the call last returned
}

func framed(rec []byte) int64 {
	return record.FramedSize(len(rec))
}

// next returns the next call's records, or io.EOF.
func (b *batcher) next() ([][]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	var (
		batch [][]byte
		size  int64
	)
	for len(batch) < b.maxRecords {
		rec, at := b.pending, b.pendingAt
		b.pending = nil
		if rec == nil {
			var err error
			rec, err = b.r.next()
			if err != nil {
				b.err = err
				break
			}
			at = b.r.place()
		}
		if len(batch) > 0 && (size+framed(rec) > b.maxBytes || slices.Contains(b.cuts, b.records+int64(len(batch)))) {
			b.pending, b.pendingAt = rec, at
			break
		}
		if len(batch) == 0 {
			b.first = at
		}
		b.last = at
		batch = append(batch, rec)
		size += framed(rec)
	}
	if len(batch) > 0 && (b.err == nil || b.err == io.EOF) {
		b.records += int64(len(batch))
		return batch, nil
	}
	return nil, b.err
}

// fileInfo is what a full pass over the input learns: its identity, and
// how many records and calls it holds.
type fileInfo struct {
	size    int64
	sha256  string
	records int64
	batches int64
}

// scan reads the whole file once: it checks every record (so that
// one the server would refuse stops the run, or is set aside by skip,
// before anything is sent), counts records and calls, and hashes the
// content, which identifies the file.
func scan(ctx context.Context, src source, maxRecords int, maxBytes int64, cuts []int64, skip func(*invalidRecord) error) (fileInfo, error) {
	r, h, cr, closeFile, err := src.open(true)
	if err != nil {
		return fileInfo{}, err
	}
	defer closeFile()
	b := &batcher{r: &skipper{r: r, skip: skip}, maxRecords: maxRecords, maxBytes: maxBytes, cuts: cuts}
	var info fileInfo
	for {
		batch, err := b.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fileInfo{}, err
		}
		info.records += int64(len(batch))
		info.batches++
		if info.batches%1024 == 0 && ctx.Err() != nil {
			return fileInfo{}, context.Cause(ctx)
		}
	}
	// Both formats read to io.EOF, so the hash and the count cover every
	// byte of the file.
	info.sha256 = hex.EncodeToString(h.Sum(nil))
	info.size = cr.n
	return info, nil
}
