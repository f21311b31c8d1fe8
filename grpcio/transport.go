package grpcio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// Config describes the table a Transport writes to and how it
// authenticates.
type Config struct {
	// Table is the target table, catalog.schema.table.
	Table string
	// Descriptor is the serialized google.protobuf.DescriptorProto of the
	// records, required for proto streams and sent on every create and
	// resume. Ignored for JSON streams.
	Descriptor []byte
	// AvroSchema is the writer schema of an Avro stream's records, an Avro
	// record schema as JSON, sent on every create (avro_schema_json). A
	// resume names the record type only, as the service's contract has
	// no schema field there. Ignored for other streams.
	AvroSchema string
	// Headers produces the credentials for every open. Nil: no
	// authorization header (for servers that need none).
	Headers HeadersProvider
	// SDK is the value of the x-zerobus-sdk header (the client library and
	// its version). Empty: the header is not sent.
	SDK string
}

// Transport is a streamio.Transport over the Zerobus gRPC service: every
// open starts an EphemeralStream or PersistentStream call on one
// grpc.ClientConn, with fresh headers.
type Transport struct {
	cc      grpc.ClientConnInterface
	client  ingestpb.ZerobusClient
	cfg     Config
	buffers encodeBuffers // the encodings' buffers (encodingPool)
}

var _ streamio.Transport = (*Transport)(nil)

// NewTransport returns a transport over cc (see Dial). It checks the table
// name (record.CheckTable): one that is not is a *core.ConfigError.
func NewTransport(cc grpc.ClientConnInterface, cfg Config) (*Transport, error) {
	if cc == nil {
		return nil, &core.ConfigError{Field: "ClientConn", Reason: "must not be nil"}
	}
	if err := record.CheckTable(cfg.Table); err != nil {
		return nil, &core.ConfigError{Field: "Table", Reason: err.Error()}
	}
	return &Transport{cc: cc, client: ingestpb.NewZerobusClient(cc), cfg: cfg}, nil
}

// InvalidateCredentials passes the server's rejection on to the headers
// provider.
func (t *Transport) InvalidateCredentials() {
	if t.cfg.Headers != nil {
		t.cfg.Headers.Invalidate()
	}
}

// Open starts a call for req.Kind with fresh headers and sends its first
// message: a create, or a resume of req.StreamID. It does not wait for
// response headers or for the answer (some servers send nothing before
// they have read the first message).
func (t *Transport) Open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	ctx, err := t.outgoing(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if req.Kind == core.Persistent && !req.Resume && req.RequestID != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, HeaderRequestID, req.RequestID)
	}
	c := newConn(ctx, cancel, req)
	switch req.Kind {
	case core.Ephemeral:
		c.st, err = t.client.EphemeralStream(ctx, grpc.ForceCodecV2(c.codec))
	case core.Persistent:
		c.st, err = t.client.PersistentStream(ctx, grpc.ForceCodecV2(c.codec))
	default:
		err = fmt.Errorf("zbstream: unknown stream kind %d", req.Kind)
	}
	if err != nil {
		cancel()
		return nil, connErr(err)
	}
	c.pool = encodingPool(&t.buffers, t.cc, c.st, c.codec)
	c.ownStream = grpcOwnStream(c.st, c.codec)
	if c.pool != nil { // nothing but gRPC sees what RecvMsg is given either
		c.resp = &response{kind: req.Kind}
	}
	if err := c.st.SendMsg(t.openMessage(req)); err != nil && !errors.Is(err, io.EOF) {
		cancel()
		return nil, connErr(err)
	}
	// io.EOF: the server has already ended the call; Recv reports how.
	return c, nil
}

// outgoing attaches the call metadata (OutgoingContext).
func (t *Transport) outgoing(ctx context.Context) (context.Context, error) {
	return OutgoingContext(ctx, t.cfg.Headers, t.cfg.Table, t.cfg.SDK)
}

// openMessage builds the first message of a call.
func (t *Transport) openMessage(req streamio.OpenRequest) any {
	rt := recordType(req.RecordType)
	var desc []byte
	if req.RecordType == core.RecordProto {
		desc = t.cfg.Descriptor
	}
	create := &ingestpb.CreateIngestStreamRequest{TableName: &t.cfg.Table, DescriptorProto: desc, RecordType: &rt}
	if req.RecordType == core.RecordAvro {
		create.AvroSchemaJson = &t.cfg.AvroSchema
	}
	switch {
	case req.Kind == core.Ephemeral:
		return &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: create}}
	case req.Resume:
		return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_ResumeStream{
			ResumeStream: &ingestpb.ResumeIngestStreamRequest{
				Identifier:      &ingestpb.ResumeIngestStreamRequest_StreamId{StreamId: req.StreamID},
				DescriptorProto: desc,
				RecordType:      &rt,
			}}}
	}
	p := &ingestpb.CreatePersistentStreamRequest{CreateStream: create} // the request id is metadata (Open)
	return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: p}}
}

func recordType(rt core.RecordType) ingestpb.RecordType {
	switch rt {
	case core.RecordProto:
		return ingestpb.RecordType_PROTO
	case core.RecordJSON:
		return ingestpb.RecordType_JSON
	case core.RecordAvro:
		return ingestpb.RecordType_AVRO
	}
	return ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED
}

// Retire retires the persistent stream streamID of the transport's table:
// it can no longer be resumed. The answer carries nothing; the stream's
// last committed offset is what its last resume or ack reported. Closing a
// stream never retires it; this does.
func (t *Transport) Retire(ctx context.Context, streamID string) error {
	ctx, err := t.outgoing(ctx)
	if err != nil {
		return err
	}
	req := &ingestpb.RetireStreamRequest{TableName: &t.cfg.Table,
		Identifier: &ingestpb.RetireStreamRequest_StreamId{StreamId: streamID}}
	if _, err := t.client.RetireStream(ctx, req); err != nil {
		return connErr(err)
	}
	return nil
}
