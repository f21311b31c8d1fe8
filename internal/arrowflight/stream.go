package arrowflight

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/arrowflight/flightfsm"
)

// Stream ingests Arrow record batches into one table over Arrow Flight
// DoPut, at least once: a batch is durable when the server has
// acknowledged all its rows, and after a reconnect only the rows not yet
// acknowledged are sent again. Its methods are safe for concurrent use.
type Stream struct {
	client *zbstream.Client
	table  string
	enc    *encoder
	opts   options
	obs    observer

	ctx    context.Context // the stream's life: canceled when it ends
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection loop has returned
	opened chan struct{} // closed at the first ready signal

	mu        sync.Mutex
	m         *flightfsm.Machine
	kept      []*encoded // the batches not yet durable, from offset keptFirst
	keptFirst int64
	bytes     int64         // their frames' bytes
	changed   chan struct{} // closed (and replaced) on every change
	closing   bool
	progress  uint64    // count of acks that made rows durable
	lastAck   time.Time // when frames in flight last saw progress
	spans     []flightfsm.Span
}

// New opens a stream of Arrow record batches of schema into table, over
// c's connection and credentials, and returns once the server has
// answered the schema with its ready signal. The stream keeps its own
// copy of nothing the caller owns: schema is only read. A schema with a
// dictionary-encoded field is refused with a *zbstream.ConfigError, a
// first open that fails for good with its error.
func New(ctx context.Context, c *zbstream.Client, table string, schema *arrow.Schema, opts ...Option) (*Stream, error) {
	if c == nil {
		return nil, configErr("client", "is nil")
	}
	if table == "" {
		return nil, configErr("table", "is empty")
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	enc, err := newEncoder(schema, o.compression, o.maxFrameBytes)
	if err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Stream{
		client: c, table: table, enc: enc, opts: o, obs: newObserver(o.observer, table),
		ctx: life, cancel: cancel, done: make(chan struct{}), opened: make(chan struct{}),
		m: flightfsm.New(), changed: make(chan struct{}),
	}
	go s.run()
	select {
	case <-s.opened:
		return s, nil
	case <-s.done:
		s.cancel()
		return nil, s.m.Err()
	case <-ctx.Done():
		s.cancel()
		<-s.done
		return nil, ctx.Err()
	}
}

// broadcast wakes everything waiting for a change. Call it with mu held.
func (s *Stream) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitChange releases mu until the next change or ctx's end, and takes
// it again.
func (s *Stream) waitChange(ctx context.Context) error {
	ch := s.changed
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failed is the error of a call made after the stream failed with err.
func failed(err error) error { return fmt.Errorf("%w: %w", zbstream.ErrStreamFailed, err) }

// IngestBatch accepts rec and returns its offset: 0 for the stream's
// first batch, one more for each next. The batch is encoded into frames
// of at most MaxFrameBytes (split by rows) before IngestBatch returns, so
// the caller may release rec at once: the stream keeps the encoded copy
// until every row is durable. It waits while the window is full
// (WithMaxInflight), honouring ctx. A batch whose schema is not the
// stream's is refused with an error wrapping ErrSchemaMismatch, one with
// no rows, or a row that alone exceeds a frame, with an error too.
func (s *Stream) IngestBatch(ctx context.Context, rec arrow.RecordBatch) (int64, error) {
	if rec == nil {
		return 0, errors.New("arrowstream: IngestBatch of a nil batch")
	}
	if err := s.accepting(); err != nil {
		return 0, err
	}
	e, err := s.enc.encode(rec)
	if err != nil {
		return 0, err
	}
	if e.bytes > s.opts.maxBytes {
		return 0, &zbstream.LimitError{Limit: "window bytes (WithMaxInflight)", Max: s.opts.maxBytes, Got: e.bytes}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if err := s.acceptingLocked(); err != nil {
			return 0, err
		}
		if len(s.kept) < s.opts.maxBatches && s.bytes+e.bytes <= s.opts.maxBytes {
			break
		}
		if err := s.waitChange(ctx); err != nil {
			return 0, err
		}
	}
	off, err := s.m.Add(rec.NumRows())
	if err != nil {
		return 0, err
	}
	s.kept = append(s.kept, e)
	s.bytes += e.bytes
	s.broadcast()
	s.obs.accepted(off, rec.NumRows(), e.bytes)
	return off, nil
}

func (s *Stream) accepting() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acceptingLocked()
}

func (s *Stream) acceptingLocked() error {
	if err := s.m.Err(); err != nil {
		return failed(err)
	}
	if s.closing {
		return zbstream.ErrClosed
	}
	return nil
}

// IngestIPC accepts one batch given as an Arrow IPC stream: the schema
// message, exactly one record batch, and nothing after the stream's end.
// Its schema must be the stream's. It is otherwise IngestBatch.
func (s *Stream) IngestIPC(ctx context.Context, b []byte) (int64, error) {
	src := bytes.NewReader(b)
	r, err := ipc.NewReader(src)
	if err != nil {
		return 0, fmt.Errorf("arrowstream: IngestIPC: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return 0, fmt.Errorf("arrowstream: IngestIPC: %w", err)
		}
		return 0, errors.New("arrowstream: IngestIPC: the IPC stream holds no record batch")
	}
	rec := r.RecordBatch()
	rec.Retain()
	defer rec.Release()
	if r.Next() {
		return 0, errors.New("arrowstream: IngestIPC: the IPC stream holds more than one record batch")
	}
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("arrowstream: IngestIPC: %w", err)
	}
	if src.Len() != 0 {
		return 0, fmt.Errorf("arrowstream: IngestIPC: %d bytes after the IPC stream", src.Len())
	}
	return s.IngestBatch(ctx, rec)
}

// Wait returns once the batch at offset is durable, with the stream's
// failure if it failed first, with ctx's error if ctx ends first, or with
// an error wrapping zbstream.ErrNeverAssigned for an offset no batch got.
func (s *Stream) Wait(ctx context.Context, offset int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case offset < 0 || offset >= s.m.Next():
			return fmt.Errorf("%w: %d", zbstream.ErrNeverAssigned, offset)
		case s.m.Durable(offset):
			return nil
		case s.m.Err() != nil:
			return failed(s.m.Err())
		}
		if err := s.waitChange(ctx); err != nil {
			return err
		}
	}
}

// Flush waits until every batch accepted before it was called is
// durable; see Wait.
func (s *Stream) Flush(ctx context.Context) error {
	s.mu.Lock()
	last := s.m.Next() - 1
	s.mu.Unlock()
	if last < 0 {
		return nil
	}
	return s.Wait(ctx, last)
}

// Unacked returns the rows not yet acknowledged, a record batch for each
// batch with some, in offset order: the whole batch, or the suffix of it
// that was not acknowledged. It is what a failed or closed stream did not
// deliver, and may be ingested into a new stream. The caller owns the
// batches and releases them. The rows are decoded from the frames the
// stream kept; as it encoded them itself, a frame that does not decode is
// a broken invariant, and panics.
func (s *Stream) Unacked() []arrow.RecordBatch {
	s.mu.Lock()
	var parts [][]*flight.FlightData
	for _, sp := range s.m.Unacked(nil) {
		e := s.kept[sp.Batch-s.keptFirst]
		i, err := s.frameFrom(e, sp.From)
		if err != nil {
			s.mu.Unlock()
			panic(fmt.Sprintf("arrowstream: a kept frame does not decode: %v", err))
		}
		parts = append(parts, e.frames[i:])
	}
	s.mu.Unlock()
	out := make([]arrow.RecordBatch, 0, len(parts))
	for _, frames := range parts {
		rec, err := s.enc.decode(frames)
		if err != nil {
			panic(fmt.Sprintf("arrowstream: a kept frame does not decode: %v", err))
		}
		out = append(out, rec)
	}
	return out
}

// frameFrom returns the index of e's frame that starts at row, the first
// row of a batch not yet durable. Acks count rows, and a server may make
// a frame durable in part: then the frame holding row is cut in two at
// row (decoded, and its two parts encoded again), so that what is
// replayed, or handed back by Unacked, starts exactly there. Call it with
// mu held.
func (s *Stream) frameFrom(e *encoded, row int64) (int, error) {
	start := int64(0)
	for i, end := range e.ends {
		switch {
		case row == start:
			return i, nil
		case row < end:
			return i + 1, s.cut(e, i, start, row)
		}
		start = end
	}
	return -1, fmt.Errorf("%w: no frame holds row %d", flightfsm.ErrMisuse, row)
}

// cut replaces e's frame i, rows [start, end), by the frames of rows
// [start, row) and [row, end), keeping the byte counts true.
func (s *Stream) cut(e *encoded, i int, start, row int64) error {
	rec, err := s.enc.decode(e.frames[i : i+1])
	if err != nil {
		return err
	}
	defer rec.Release()
	var frames []*flight.FlightData
	var ends []int64
	var size int64
	for _, part := range [][2]int64{{0, row - start}, {row - start, rec.NumRows()}} {
		slice := rec.NewSlice(part[0], part[1])
		enc, err := s.enc.encode(slice)
		slice.Release()
		if err != nil {
			return err
		}
		frames = append(frames, enc.frames...)
		for _, end := range enc.ends {
			ends = append(ends, start+part[0]+end)
		}
		size += enc.bytes
	}
	old := int64(proto.Size(e.frames[i]))
	e.frames = slices.Concat(e.frames[:i], frames, e.frames[i+1:])
	e.ends = slices.Concat(e.ends[:i], ends, e.ends[i+1:])
	e.bytes += size - old
	s.bytes += size - old
	return nil
}

// Err returns the stream's failure: nil while it runs and after a Close
// that delivered everything, the error that ended it otherwise (a
// connection failure past the retry budget, a protocol violation, a close
// timeout).
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.Err()
}
