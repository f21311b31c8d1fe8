//go:build arrow

package zerobus

// The official SDK's Arrow Flight API (Beta in the official SDK), built
// with -tags arrow: without the tag this package imports no Arrow code,
// as the library's packages must not (docs/protocol.md §12). The stream
// underneath is zbstream's Flight client, the one module arrowstream
// wraps.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/arrowflight"
)

// Messages of the Arrow API, the official SDK's where it has them.
const (
	msgArrowClosed    = "Arrow stream has been closed"
	msgNoSchemaBytes  = "schemaIpcBytes must not be empty"
	msgArrowActive    = "Stream is in invalid state: Cannot get unacked batches from an active stream. Stream must be closed first."
	msgArrowFlushTime = "Stream is closed: Waiting for acknowledgement timed out"
)

// ZerobusArrowStream ingests Arrow record batches, given as Arrow IPC
// stream bytes, into one table over Arrow Flight, at least once: after a
// reconnect only the rows not yet acknowledged are sent again. Offsets
// start at 0, one per batch. Every method is safe for concurrent use.
type ZerobusArrowStream struct {
	sdk          *ZerobusSdk
	st           *arrowflight.Stream
	own          *zbstream.Client // the stream's own client, closed with it; nil for a shared one
	schema       *arrow.Schema
	flushTimeout time.Duration

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// CreateArrowStream creates an Arrow Flight stream into tableName,
// authenticated with OAuth client credentials as CreateStream is.
// schemaIpcBytes is an Arrow IPC stream holding the batches' schema and
// no batch (ipc.NewWriter with the schema, closed without a write).
// options nil means DefaultArrowStreamConfigurationOptions. It returns
// once the server has answered the schema with its ready signal, within
// ConnectionTimeoutMs. Every error is a non-retryable *ZerobusError.
func (s *ZerobusSdk) CreateArrowStream(tableName string, schemaIpcBytes []byte, clientID string, clientSecret string, options *ArrowStreamConfigurationOptions) (*ZerobusArrowStream, error) {
	creds := zbstream.WithOAuth(s.ucURL, clientID, clientSecret)
	return s.createArrow(tableName, schemaIpcBytes, options, creds, func() (*zbstream.Client, error) { return s.oauthClient(clientID, clientSecret) })
}

// CreateArrowStreamWithHeadersProvider creates an Arrow Flight stream as
// CreateArrowStream does, with the headers of headersProvider instead of
// OAuth.
func (s *ZerobusSdk) CreateArrowStreamWithHeadersProvider(tableName string, schemaIpcBytes []byte, headersProvider HeadersProvider, options *ArrowStreamConfigurationOptions) (*ZerobusArrowStream, error) {
	if headersProvider == nil {
		return nil, fatal(msgNoProvider)
	}
	creds := zbstream.WithHeadersProvider(providerAdapter{headersProvider})
	return s.createArrow(tableName, schemaIpcBytes, options, creds, func() (*zbstream.Client, error) { return s.providerClient(headersProvider) })
}

func (s *ZerobusSdk) createArrow(table string, schemaIPC []byte, options *ArrowStreamConfigurationOptions, creds zbstream.Option, shared func() (*zbstream.Client, error)) (*ZerobusArrowStream, error) {
	if len(schemaIPC) == 0 {
		return nil, fatal(msgNoSchemaBytes)
	}
	schema, err := schemaOf(schemaIPC)
	if err != nil {
		return nil, err
	}
	o := options.effective()
	opts, err := arrowOptions(o)
	if err != nil {
		return nil, err
	}
	c, own, err := s.streamClient(creds, shared)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), millis(o.ConnectionTimeoutMs))
	defer cancel()
	st, err := arrowflight.New(ctx, c, table, schema, opts...)
	if err != nil {
		s.release(own)
		return nil, wrapCreate(err)
	}
	return &ZerobusArrowStream{sdk: s, st: st, own: own, schema: schema, flushTimeout: millis(o.FlushTimeoutMs)}, nil
}

// schemaOf reads the schema of an IPC stream that holds no batch.
func schemaOf(b []byte) (*arrow.Schema, error) {
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fatal("Invalid argument: schemaIpcBytes is not an Arrow IPC stream: " + err.Error())
	}
	defer r.Release()
	if r.Next() {
		return nil, fatal("Invalid argument: schemaIpcBytes must hold the schema only, not a record batch")
	}
	if err := r.Err(); err != nil {
		return nil, fatal("Invalid argument: schemaIpcBytes is not an Arrow IPC stream: " + err.Error())
	}
	return r.Schema(), nil
}

// IngestBatch accepts one record batch, given as an Arrow IPC stream (the
// schema, one batch), and returns its offset once it is queued, not yet
// acknowledged (see WaitForOffset and Flush). The batch is encoded into
// frames of at most 2 MiB, split by rows, before IngestBatch returns: the
// caller may reuse ipcBytes at once. Its schema must be the stream's. It
// blocks while MaxInflightBatches batches are in flight. On error the
// offset is -1.
func (st *ZerobusArrowStream) IngestBatch(ipcBytes []byte) (int64, error) {
	if st.closed.Load() {
		return -1, fatal(msgArrowClosed)
	}
	off, err := st.st.IngestIPC(context.Background(), ipcBytes)
	if err != nil {
		return -1, wrap(err)
	}
	return off, nil
}

// WaitForOffset blocks until the batch at offset is acknowledged, at most
// FlushTimeoutMs: then it returns a retryable *ZerobusError. If the stream
// failed first, the error is the failure's.
func (st *ZerobusArrowStream) WaitForOffset(offset int64) error {
	if st.closed.Load() {
		return fatal(msgArrowClosed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), st.flushTimeout)
	defer cancel()
	return st.waitErr(ctx, st.st.Wait(ctx, offset))
}

// Flush blocks until every batch accepted before it is acknowledged, at
// most FlushTimeoutMs (see WaitForOffset).
func (st *ZerobusArrowStream) Flush() error {
	if st.closed.Load() {
		return fatal(msgArrowClosed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), st.flushTimeout)
	defer cancel()
	return st.waitErr(ctx, st.st.Flush(ctx))
}

// waitErr converts the error of a wait bounded by ctx.
func (st *ZerobusArrowStream) waitErr(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return &ZerobusError{Message: msgArrowFlushTime, IsRetryable: true, err: err}
	}
	return wrap(err)
}

// Close waits until every batch accepted is acknowledged (at most
// FlushTimeoutMs), ends the stream and releases its connection. It returns
// nil on a stream that had failed before, and the batches a failing Close
// could not deliver stay in GetUnackedBatches. Close is idempotent: later
// calls return the first one's result.
func (st *ZerobusArrowStream) Close() error {
	st.closeOnce.Do(func() {
		st.closed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), st.flushTimeout)
		defer cancel()
		st.closeErr = wrap(st.st.Close(ctx))
		st.sdk.release(st.own)
	})
	return st.closeErr
}

// IsClosed reports whether the stream was closed or has failed.
func (st *ZerobusArrowStream) IsClosed() bool {
	return st.closed.Load() || st.st.Err() != nil
}

// GetUnackedBatches returns the rows not acknowledged, one Arrow IPC
// stream (the schema, one record batch) for each batch with some, in
// offset order: the whole batch, or the suffix of its rows not
// acknowledged. Each can be ingested into a new stream. Call it after the
// stream failed or was closed; on a stream still running it is a
// non-retryable *ZerobusError. (The official SDK refuses it after Close as
// well; here it works after Close.)
func (st *ZerobusArrowStream) GetUnackedBatches() ([][]byte, error) {
	if !st.IsClosed() {
		return nil, fatal(msgArrowActive)
	}
	recs := st.st.Unacked()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	out := make([][]byte, 0, len(recs))
	for i, r := range recs {
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(st.schema))
		if err := w.Write(r); err != nil {
			return nil, fatal(fmt.Sprintf("encode unacked batch %d: %v", i, err))
		}
		if err := w.Close(); err != nil {
			return nil, fatal(fmt.Sprintf("encode unacked batch %d: %v", i, err))
		}
		out = append(out, buf.Bytes())
	}
	return out, nil
}
