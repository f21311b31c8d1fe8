package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ErrNotArrow: the stream was not written over Arrow Flight.
var ErrNotArrow = errors.New("server: not an Arrow stream")

// ArrowRecords returns an Arrow stream's schema and its stored frames as
// record batches, in offset order (one per frame). The caller releases
// each batch. A stream of another kind is ErrNotArrow.
func (s *Server) ArrowRecords(ctx context.Context, id string) (*arrow.Schema, []arrow.RecordBatch, error) {
	meta, err := s.store.Stream(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	batches, err := s.store.Records(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return DecodeArrow(meta, batches)
}

// DecodeArrow decodes stored batches of an Arrow stream (any run of them,
// such as a page read from a Store) under the stream's schema: the schema
// message, then the batches' frames, make an IPC stream. The caller
// releases each record batch.
func DecodeArrow(meta StreamMeta, batches []Batch) (*arrow.Schema, []arrow.RecordBatch, error) {
	if meta.RecordType != RecordTypeArrow {
		return nil, nil, fmt.Errorf("%w: stream %q", ErrNotArrow, meta.ID)
	}
	var buf bytes.Buffer
	buf.Write(meta.ArrowSchema)
	for _, b := range batches {
		if len(b.Records) != 1 {
			return nil, nil, fmt.Errorf("server: Arrow stream %q: batch %d holds %d records, not one frame", meta.ID, b.Offset, len(b.Records))
		}
		buf.Write(b.Records[0])
	}
	buf.Write(ipcEOS)
	rd, err := ipc.NewReader(&buf, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, nil, fmt.Errorf("server: Arrow stream %q: %w", meta.ID, err)
	}
	defer rd.Release()
	out := make([]arrow.RecordBatch, 0, len(batches))
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	if err := rd.Err(); err != nil || len(out) != len(batches) {
		for _, r := range out {
			r.Release()
		}
		if err == nil {
			err = fmt.Errorf("%d frames decoded of %d", len(out), len(batches))
		}
		return nil, nil, fmt.Errorf("server: Arrow stream %q: %w", meta.ID, err)
	}
	return rd.Schema(), out, nil
}
