package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The columnar input formats, as the state file names them.
const (
	formatArrowIPC = "arrow-ipc" // -format arrow: an Arrow IPC file, stream or file format
	formatParquet  = "parquet"   // -format parquet
)

// Magic numbers: the IPC file format starts (and ends) with "ARROW1" and
// padding, where the stream format starts with a message; a Parquet file
// starts (and ends) with "PAR1".
var (
	arrowMagic   = []byte("ARROW1")
	parquetMagic = []byte("PAR1")
)

// parquetBufferBytes is what the Parquet reader buffers of a column
// chunk: it reads pages through a buffer of this size instead of loading
// a whole column chunk (a row group's column, up to all of a file written
// in one row group).
const parquetBufferBytes = 1 << 20

// arrowInput is an Arrow IPC or Parquet file opened for ingestion: its
// schema, its row count, and readers of its rows from any row on.
type arrowInput struct {
	path   string
	format string // formatArrowIPC or formatParquet
	kind   string // what the file turned out to be, for messages
	schema *arrow.Schema
	rows   int64
	f      *os.File
	ipc    *ipc.FileReader     // the IPC file format
	pq     *pqarrow.FileReader // Parquet
}

// openArrowInput opens path as format, reads its schema and counts its
// rows: from the metadata for Parquet and the IPC file format; for the
// IPC stream format, which has no index, by reading every batch, which
// checks them all before anything is sent. A file that is not of the
// format is an input error (exit code 3).
func openArrowInput(ctx context.Context, path, format string, batchRows int) (in *arrowInput, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, inputErr("%v", err)
	}
	in = &arrowInput{path: path, format: format, f: f}
	defer func() {
		if err != nil {
			in.close()
			in = nil
		}
	}()
	head := make([]byte, 8)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
		return nil, inputErr("%s: %v", path, err)
	}
	head = head[:n]
	defer recoverInput(path, &err)
	if format == formatParquet {
		return in, in.openParquet(head, batchRows)
	}
	return in, in.openIPC(ctx, head)
}

// openIPC reads an Arrow IPC file's schema and rows.
func (in *arrowInput) openIPC(ctx context.Context, head []byte) error {
	if bytes.HasPrefix(head, arrowMagic) {
		in.kind = "Arrow IPC file"
		r, err := ipc.NewFileReader(in.f)
		if err != nil {
			return in.notThe("an Arrow IPC file", head, err)
		}
		in.ipc, in.schema = r, r.Schema()
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				return inputErr("%s: record batch %d of %d: %v", in.path, i+1, r.NumRecords(), err)
			}
			in.rows += rec.NumRows()
		}
		return nil
	}
	in.kind = "Arrow IPC stream"
	r, err := in.streamReader()
	if err != nil {
		return in.notThe("an Arrow IPC stream or file", head, err)
	}
	defer r.Release()
	in.schema = r.Schema()
	for i := 1; r.Next(); i++ {
		in.rows += r.RecordBatch().NumRows()
		if i%64 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	if err := r.Err(); err != nil {
		return inputErr("%s: after %s: %v", in.path, plural(in.rows, "row"), err)
	}
	return nil
}

// openParquet reads a Parquet file's footer: its schema and rows.
func (in *arrowInput) openParquet(head []byte, batchRows int) error {
	in.kind = "Parquet file"
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled, props.BufferSize = true, parquetBufferBytes
	pf, err := file.NewParquetReader(in.f, file.WithReadProps(props))
	if err != nil {
		return in.notThe("a Parquet file", head, err)
	}
	r, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(batchRows)}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return inputErr("%s: %v", in.path, err)
	}
	in.pq = r
	if in.schema, err = r.Schema(); err != nil {
		return inputErr("%s: its schema has no Arrow equivalent: %v", in.path, err)
	}
	in.rows = pf.NumRows()
	return nil
}

// notThe is the error of a file that is not what -format says, with a
// hint when it is the other format.
func (in *arrowInput) notThe(what string, head []byte, err error) error {
	hint := ""
	switch {
	case in.format == formatArrowIPC && bytes.HasPrefix(head, parquetMagic):
		hint = " (it starts as a Parquet file does: give -format parquet)"
	case in.format == formatParquet && bytes.HasPrefix(head, arrowMagic):
		hint = " (it starts as an Arrow IPC file does: give -format arrow)"
	case in.format == formatParquet && len(head) > 0 && head[0] == '{':
		hint = " (JSON lines are -format json, the default)"
	case in.format == formatArrowIPC && len(head) > 0 && head[0] == '{':
		hint = " (JSON lines are -format json, the default)"
	}
	return inputErr("%s is not %s%s: %v", in.path, what, hint, err)
}

// records returns a reader of the file's record batches from row from
// on (its first batch may start before from: the caller skips the rest).
func (in *arrowInput) records(ctx context.Context, from int64) (array.RecordReader, error) {
	switch {
	case in.pq != nil:
		r, err := in.pq.GetRecordReader(ctx, nil, nil)
		if err != nil {
			return nil, inputErr("%s: %v", in.path, err)
		}
		if from > 0 && from < in.rows {
			// The reader finds the row's page, reading page headers only
			// where the file has no offset index.
			if err := r.SeekToRow(from); err != nil {
				r.Release()
				return nil, inputErr("%s: seeking to row %d: %v", in.path, from, err)
			}
		}
		return &seeked{RecordReader: r, skipped: from}, nil
	case in.ipc != nil:
		return &ipcFileRecords{r: in.ipc, schema: in.ipc.Schema()}, nil
	}
	r, err := in.streamReader()
	if err != nil {
		return nil, inputErr("%s: %v", in.path, err)
	}
	return r, nil
}

// streamReader opens the file again and reads it as an IPC stream, from
// its start: the format has no index to start elsewhere.
func (in *arrowInput) streamReader() (array.RecordReader, error) {
	f, err := os.Open(in.path)
	if err != nil {
		return nil, err
	}
	r, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &closing{RecordReader: r, f: f}, nil
}

// close releases the file and its readers.
func (in *arrowInput) close() {
	if in.pq != nil {
		in.pq.ParquetReader().Close() // closes in.f
		in.pq = nil
		return
	}
	if in.ipc != nil {
		in.ipc.Close()
		in.ipc = nil
	}
	in.f.Close()
}

// seeked is a record reader that already skipped its first rows.
type seeked struct {
	array.RecordReader
	skipped int64
}

// closing is a record reader that closes its file when released.
type closing struct {
	array.RecordReader
	f *os.File
}

func (c *closing) Release() {
	c.RecordReader.Release()
	c.f.Close()
}

// ipcFileRecords reads an IPC file-format reader's record batches in
// order, as an array.RecordReader.
type ipcFileRecords struct {
	r      *ipc.FileReader
	schema *arrow.Schema
	i      int
	cur    arrow.RecordBatch
	err    error
}

func (f *ipcFileRecords) Schema() *arrow.Schema { return f.schema }

func (f *ipcFileRecords) Next() bool {
	if f.cur != nil {
		f.cur.Release()
		f.cur = nil
	}
	if f.err != nil || f.i >= f.r.NumRecords() {
		return false
	}
	rec, err := f.r.RecordBatchAt(f.i)
	if err != nil {
		f.err = fmt.Errorf("record batch %d of %d: %w", f.i+1, f.r.NumRecords(), err)
		return false
	}
	f.i++
	f.cur = rec
	return true
}

func (f *ipcFileRecords) RecordBatch() arrow.RecordBatch { return f.cur }

// Record is RecordBatch, as array.RecordReader still asks.
func (f *ipcFileRecords) Record() arrow.RecordBatch { return f.cur }

func (f *ipcFileRecords) Err() error { return f.err }

func (f *ipcFileRecords) Retain() {}

func (f *ipcFileRecords) Release() {
	if f.cur != nil {
		f.cur.Release()
		f.cur = nil
	}
}

// recoverInput turns a panic of the Arrow or Parquet readers on a
// malformed file into an input error: a file is data, and bad data is
// reported, never a crash.
func recoverInput(path string, err *error) {
	if p := recover(); p != nil {
		*err = inputErr("%s is malformed: reading it failed: %v", path, p)
	}
}
