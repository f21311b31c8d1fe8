package servertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrow frames written by hand, for tests that speak Flight DoPut to the
// server frame by frame (a malformed one included) rather than through a
// client library.

// SchemaFrame is the first FlightData of an Arrow stream of schema: its
// IPC schema message in data_header, no body, no app_metadata.
func SchemaFrame(schema *arrow.Schema) *flight.FlightData {
	p := ipc.GetSchemaPayload(schema, memory.DefaultAllocator)
	defer p.Release()
	return &flight.FlightData{DataHeader: bytes.Clone(p.Meta().Bytes())}
}

// BatchFrame is the data FlightData of rec at offset: its IPC record batch
// message (opts may compress its body: ipc.WithLZ4, ipc.WithZstd) with
// app_metadata {"offset_id":offset}. Set AppMetadata to send another.
func BatchFrame(rec arrow.RecordBatch, offset int64, opts ...ipc.Option) (*flight.FlightData, error) {
	p, err := ipc.GetRecordBatchPayload(rec, opts...)
	if err != nil {
		return nil, fmt.Errorf("servertest: record batch: %w", err)
	}
	defer p.Release()
	meta := p.Meta()
	defer meta.Release()
	var body bytes.Buffer
	if err := p.SerializeBody(&body); err != nil {
		return nil, fmt.Errorf("servertest: record batch body: %w", err)
	}
	return &flight.FlightData{
		DataHeader:  bytes.Clone(meta.Bytes()),
		DataBody:    body.Bytes(),
		AppMetadata: fmt.Appendf(nil, `{"offset_id":%d}`, offset),
	}, nil
}

// PutFrames runs one DoPut call on c with ctx (which carries the token and
// table: Server.Context, OutgoingContext): it sends frames until the
// server ends the call, half-closes, and returns the app_metadata of every
// PutResult received (the ready signal first) and the call's status (nil
// for OK).
func PutFrames(ctx context.Context, c flight.FlightServiceClient, frames ...*flight.FlightData) (acks []string, err error) {
	st, err := c.DoPut(ctx)
	if err != nil {
		return nil, err
	}
	for _, fd := range frames {
		if st.Send(fd) != nil {
			break // the call ended: Recv says why
		}
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return acks, nil
		}
		if err != nil {
			return acks, err
		}
		acks = append(acks, string(r.AppMetadata))
	}
}

// PutArrow sends an Arrow stream of schema, the batches at offsets 0, 1,
// ..., in one DoPut call (PutFrames).
func PutArrow(ctx context.Context, c flight.FlightServiceClient, schema *arrow.Schema, recs ...arrow.RecordBatch) (acks []string, err error) {
	frames := []*flight.FlightData{SchemaFrame(schema)}
	for i, rec := range recs {
		fd, err := BatchFrame(rec, int64(i))
		if err != nil {
			return nil, err
		}
		frames = append(frames, fd)
	}
	return PutFrames(ctx, c, frames...)
}
