package arrowstream

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/arrowflight"
)

// Stream ingests Arrow record batches into one table over Arrow Flight
// DoPut, at least once: a batch is durable when the server has
// acknowledged all its rows, and after a reconnect only the rows not yet
// acknowledged are sent again. Its methods are safe for concurrent use.
type Stream struct{ s *arrowflight.Stream }

// New opens a stream of Arrow record batches of schema into table, over
// c's connection and credentials, and returns once the server has
// answered the schema with its ready signal. The stream keeps its own
// copy of nothing the caller owns: schema is only read. A schema with a
// dictionary-encoded field is refused with a *zbstream.ConfigError, a
// first open that fails for good with its error.
func New(ctx context.Context, c *zbstream.Client, table string, schema *arrow.Schema, opts ...Option) (*Stream, error) {
	s, err := arrowflight.New(ctx, c, table, schema, opts...)
	if err != nil {
		return nil, err
	}
	return &Stream{s}, nil
}

// IngestBatch accepts rec and returns its offset: 0 for the stream's
// first batch, one more for each next. The batch is encoded into frames
// of at most MaxFrameBytes (split by rows) before IngestBatch returns, so
// the caller may release rec at once: the stream keeps the encoded copy
// until every row is durable. It waits while the window is full
// (WithMaxInflight), honouring ctx. A batch whose schema is not the
// stream's is refused with an error wrapping ErrSchemaMismatch, one with
// no rows, or a row that alone exceeds a frame, with an error too.
func (s *Stream) IngestBatch(ctx context.Context, rec arrow.RecordBatch) (int64, error) {
	return s.s.IngestBatch(ctx, rec)
}

// IngestIPC accepts one batch given as an Arrow IPC stream: the schema
// message, exactly one record batch, and nothing after the stream's end.
// Its schema must be the stream's. It is otherwise IngestBatch.
func (s *Stream) IngestIPC(ctx context.Context, b []byte) (int64, error) {
	return s.s.IngestIPC(ctx, b)
}

// Wait returns once the batch at offset is durable, with the stream's
// failure if it failed first, with ctx's error if ctx ends first, or with
// an error wrapping zbstream.ErrNeverAssigned for an offset no batch got.
func (s *Stream) Wait(ctx context.Context, offset int64) error { return s.s.Wait(ctx, offset) }

// Flush waits until every batch accepted before it was called is
// durable; see Wait.
func (s *Stream) Flush(ctx context.Context) error { return s.s.Flush(ctx) }

// Close stops accepting batches, waits until every batch accepted is
// durable, half-closes the connection and waits for the server to end
// it. It waits at most the close timeout (WithTimeouts) and until ctx
// ends: the batches still not durable then fail with an error wrapping
// zbstream.ErrCloseTimeout (or ctx's error), which Close returns; they
// stay in Unacked. Close is idempotent, returns nil on a stream that had
// failed before it was called, and leaves no goroutine or call behind.
func (s *Stream) Close(ctx context.Context) error { return s.s.Close(ctx) }

// Unacked returns the rows not yet acknowledged, a record batch for each
// batch with some, in offset order: the whole batch, or the suffix of it
// that was not acknowledged. It is what a failed or closed stream did not
// deliver, and may be ingested into a new stream. The caller owns the
// batches and releases them.
func (s *Stream) Unacked() []arrow.RecordBatch { return s.s.Unacked() }
