package ingest

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowBatches cuts the record batches of a file into the batches sent:
// n rows each, the last one fewer. A larger batch of the file is sliced
// (no copy); smaller ones are concatenated (a copy of n rows at most).
// What it holds at a time is one batch of the file and n rows, whatever
// the size of the file.
type rowBatches struct {
	path    string
	r       array.RecordReader
	n       int64
	pending []arrow.RecordBatch // retained pieces, in file order
	rows    int64               // rows in pending
	eof     bool
	read    int64 // rows taken from r (the rows r skipped itself included)
}

// newRowBatches reads in from row from on, in batches of n rows.
func newRowBatches(in *arrowInput, r array.RecordReader, from, n int64) (*rowBatches, error) {
	b := &rowBatches{path: in.path, r: r, n: n}
	if s, ok := r.(*seeked); ok {
		b.read = s.skipped
	}
	if err := b.skip(from - b.read); err != nil {
		b.release()
		return nil, err
	}
	return b, nil
}

// fill reads the file's batches until pending holds want rows or the
// file ends.
func (b *rowBatches) fill(want int64) (err error) {
	defer recoverInput(b.path, &err)
	for b.rows < want && !b.eof {
		if !b.r.Next() {
			if err := b.r.Err(); err != nil {
				return inputErr("%s: after row %d: %v", b.path, b.read, err)
			}
			b.eof = true
			break
		}
		rec := b.r.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		b.pending = append(b.pending, rec)
		b.rows += rec.NumRows()
		b.read += rec.NumRows()
	}
	return nil
}

// skip drops the next rows rows.
func (b *rowBatches) skip(rows int64) error {
	for rows > 0 {
		if len(b.pending) == 0 {
			if err := b.fill(1); err != nil {
				return err
			}
			if len(b.pending) == 0 {
				return inputErr("%s ends %s before the rows to skip", b.path, plural(rows, "row"))
			}
		}
		head := b.pending[0]
		if head.NumRows() <= rows {
			rows -= head.NumRows()
			b.rows -= head.NumRows()
			head.Release()
			b.pending = b.pending[1:]
			continue
		}
		b.pending[0] = head.NewSlice(rows, head.NumRows())
		head.Release()
		b.rows -= rows
		rows = 0
	}
	return nil
}

// next returns the next batch to send, which the caller releases, or
// io.EOF after the last.
func (b *rowBatches) next() (arrow.RecordBatch, error) {
	if err := b.fill(b.n); err != nil {
		return nil, err
	}
	if b.rows == 0 {
		return nil, io.EOF
	}
	take := min(b.n, b.rows)
	var pieces []arrow.RecordBatch
	for left := take; left > 0; {
		head := b.pending[0]
		if head.NumRows() <= left {
			pieces = append(pieces, head)
			b.pending = b.pending[1:]
			left -= head.NumRows()
			continue
		}
		pieces = append(pieces, head.NewSlice(0, left))
		b.pending[0] = head.NewSlice(left, head.NumRows())
		head.Release()
		left = 0
	}
	b.rows -= take
	if len(pieces) == 1 {
		return pieces[0], nil
	}
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	return concatBatches(b.path, pieces, take)
}

// concatBatches copies pieces, batches of one schema, into one batch of
// rows rows.
func concatBatches(path string, pieces []arrow.RecordBatch, rows int64) (rec arrow.RecordBatch, err error) {
	defer recoverInput(path, &err)
	schema := pieces[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(pieces))
	for i := range cols {
		for j, p := range pieces {
			parts[j] = p.Column(i)
		}
		if cols[i], err = array.Concatenate(parts, memory.DefaultAllocator); err != nil {
			return nil, inputErr("%s: column %s: %v", path, schema.Field(i).Name, err)
		}
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}

// release lets go of what the batches hold, and of the reader.
func (b *rowBatches) release() {
	for _, p := range b.pending {
		p.Release()
	}
	b.pending = nil
	b.r.Release()
}
