package arrowflight

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream"
)

// MaxFrameBytes is the largest data FlightData a stream sends, its
// app_metadata included (docs/protocol.md §12.3): a batch whose encoding
// is larger is split by rows into several frames.
const MaxFrameBytes = 2 << 20

// metadataReserve is the room kept in a frame for its app_metadata,
// {"offset_id":N} with N up to 19 digits, and its field tag and length.
const metadataReserve = 40

// encoded is one logical batch as its frames: IPC record-batch messages
// without app_metadata, each holding rows [ends[i-1], ends[i]).
type encoded struct {
	frames []*flight.FlightData
	ends   []int64
	bytes  int64
}

// encoder turns record batches into frames of the stream's schema.
type encoder struct {
	schema   *arrow.Schema
	ipcOpts  []ipc.Option
	maxFrame int
	head     *flight.FlightData // the schema frame
}

func newEncoder(schema *arrow.Schema, c Compression, maxFrame int) (*encoder, error) {
	if err := CheckSchema(schema); err != nil {
		return nil, err
	}
	opts := []ipc.Option{ipc.WithSchema(schema)}
	switch c {
	case CompressionLZ4:
		opts = append(opts, ipc.WithLZ4())
	case CompressionZstd:
		opts = append(opts, ipc.WithZstd())
	}
	e := &encoder{schema: schema, ipcOpts: opts, maxFrame: maxFrame}
	var sink collector
	w := flight.NewRecordWriter(&sink, opts...)
	if err := w.Close(); err != nil || len(sink.frames) != 1 {
		return nil, fmt.Errorf("arrowstream: encoding the schema: %v (%d messages)", err, len(sink.frames))
	}
	e.head = sink.frames[0]
	return e, nil
}

// CheckSchema returns the *zbstream.ConfigError New returns for schema,
// or nil when a stream may be opened with it: a nil schema, or one with a
// dictionary-encoded field (nested or not), is refused. It is for callers
// that want to refuse a schema before they dial, or before they do work
// that only makes sense if the stream can take it.
func CheckSchema(schema *arrow.Schema) error {
	if schema == nil {
		return configErr("schema", "is nil")
	}
	if f, ok := dictionaryField(schema.Fields()); ok {
		return configErr("schema", fmt.Sprintf("field %q is dictionary-encoded, which Arrow Flight ingestion does not take", f))
	}
	return nil
}

// dictionaryField returns the name of a dictionary-encoded field, nested
// or not: frames carry no dictionary batches.
func dictionaryField(fields []arrow.Field) (string, bool) {
	for _, f := range fields {
		if f.Type.ID() == arrow.DICTIONARY {
			return f.Name, true
		}
		if nested, ok := f.Type.(arrow.NestedType); ok {
			if name, ok := dictionaryField(nested.Fields()); ok {
				return f.Name + "." + name, true
			}
		}
	}
	return "", false
}

// collector keeps the FlightData messages a flight.Writer emits, copied:
// the writer reuses its buffers.
type collector struct{ frames []*flight.FlightData }

// Send implements flight.DataStreamWriter.
func (c *collector) Send(fd *flight.FlightData) error {
	c.frames = append(c.frames, &flight.FlightData{
		DataHeader: bytes.Clone(fd.DataHeader),
		DataBody:   bytes.Clone(fd.DataBody),
	})
	return nil
}

// ErrSchemaMismatch is wrapped by the error of an ingest whose batch's
// schema is not the stream's (fields, types, nullability and metadata).
var ErrSchemaMismatch = errors.New("arrowstream: the batch's schema is not the stream's")

// encode splits rec by rows into frames of at most maxFrame bytes each.
// The frames own their bytes: rec may be released once it returns. A
// single row larger than a frame is refused with a *zbstream.LimitError.
func (e *encoder) encode(rec arrow.RecordBatch) (*encoded, error) {
	if !rec.Schema().Equal(e.schema) || !rec.Schema().Metadata().Equal(e.schema.Metadata()) {
		return nil, fmt.Errorf("%w: got %s", ErrSchemaMismatch, rec.Schema())
	}
	n := rec.NumRows()
	if n == 0 {
		return nil, fmt.Errorf("arrowstream: a batch of no rows")
	}
	var sink collector
	w := flight.NewRecordWriter(&sink, e.ipcOpts...)
	defer w.Close()
	limit := e.maxFrame - metadataReserve
	// A first guess from the buffers' sizes; halving corrects it.
	step := n
	if size := bufferBytes(rec); size > int64(limit) {
		step = max(1, n*int64(limit)*3/4/size)
	}
	out := &encoded{}
	for start := int64(0); start < n; {
		k := min(step, n-start)
		for {
			fd, err := e.encodeSlice(w, &sink, rec, start, start+k)
			if err != nil {
				return nil, err
			}
			if size := proto.Size(fd); size <= limit {
				out.frames = append(out.frames, fd)
				out.ends = append(out.ends, start+k)
				out.bytes += int64(size)
				break
			} else if k == 1 {
				return nil, &zbstream.LimitError{Limit: "Arrow Flight frame bytes (one row)", Max: int64(limit), Got: int64(size)}
			}
			k /= 2
			step = k
		}
		start += k
	}
	return out, nil
}

// encodeSlice encodes rows [from, to) of rec as one record-batch message.
func (e *encoder) encodeSlice(w *flight.Writer, sink *collector, rec arrow.RecordBatch, from, to int64) (*flight.FlightData, error) {
	slice := rec.NewSlice(from, to)
	defer slice.Release()
	sink.frames = sink.frames[:0]
	if err := w.Write(slice); err != nil {
		return nil, fmt.Errorf("arrowstream: encoding rows [%d,%d): %w", from, to, err)
	}
	// The writer emits the schema before its first batch: the last
	// message is the batch.
	if len(sink.frames) == 0 {
		return nil, fmt.Errorf("arrowstream: encoding rows [%d,%d) gave no message", from, to)
	}
	return sink.frames[len(sink.frames)-1], nil
}

// bufferBytes returns the bytes of rec's buffers, children included.
func bufferBytes(rec arrow.RecordBatch) int64 {
	var total int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				total += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, col := range rec.Columns() {
		walk(col.Data())
	}
	return total
}

// decode turns frames back into one record batch, for Unacked. The
// caller releases it.
func (e *encoder) decode(frames []*flight.FlightData) (arrow.RecordBatch, error) {
	r, err := flight.NewRecordReader(&replay{frames: append([]*flight.FlightData{e.head}, frames...)})
	if err != nil {
		return nil, fmt.Errorf("arrowstream: decoding kept frames: %w", err)
	}
	defer r.Release()
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		parts = append(parts, rec)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("arrowstream: decoding kept frames: %w", err)
	}
	return concat(e.schema, parts)
}

// concat joins record batches of one schema into one.
func concat(schema *arrow.Schema, parts []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	for i := range cols {
		arrs := make([]arrow.Array, len(parts))
		for j, p := range parts {
			arrs[j] = p.Column(i)
		}
		c, err := array.Concatenate(arrs, memory.DefaultAllocator)
		if err != nil {
			for _, done := range cols[:i] {
				done.Release()
			}
			return nil, fmt.Errorf("arrowstream: joining kept frames: %w", err)
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// replay feeds kept frames to a flight.Reader.
type replay struct{ frames []*flight.FlightData }

// Recv implements flight.DataStreamReader.
func (r *replay) Recv() (*flight.FlightData, error) {
	if len(r.frames) == 0 {
		return nil, io.EOF
	}
	fd := r.frames[0]
	r.frames = r.frames[1:]
	return fd, nil
}
