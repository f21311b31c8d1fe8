// Package rawclient is the ceiling the benchmarks measure zbstream
// against: a persistent stream driven by hand with the generated gRPC
// client, sending the same protobuf messages as zbstream with no window,
// no validation, no retry and no copy of the records but gRPC's own
// encoding. It is used by BenchmarkEndToEnd, BenchmarkAwaited and the
// bench command, so that all three compare against one client.
//
// A ceiling must not be beaten by a client that does more work, so it
// dials exactly as zbstream does (grpcio.Dial with zbstream's defaults:
// the same keepalive, connect parameters, receive limit and dialer) and
// does the least a gRPC client can: one message reused for every call
// (only its offset changes), one response message reused for every ack,
// and acks read either on the sending goroutine (Await: no hand-off) or
// on one reader goroutine started once (StartReader) when the sender must
// not stop to read them.
package rawclient

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/zbstream/zbstream/grpcio"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// Config says where a Stream writes and what it sends.
type Config struct {
	Endpoint string // http://host:port or https://host:port
	Token    string // bearer token; "": no authorization header
	Table    string // catalog.schema.table
	// RequestID is the create message's client request id; "": none.
	RequestID string
	// Record is the JSON record every call sends, Batch times (Batch 1:
	// an IngestRecordRequest, more: an IngestRecordBatchRequest).
	Record []byte
	Batch  int
}

type bidi = grpc.BidiStreamingClient[ingestpb.PersistentStreamRequest, ingestpb.PersistentStreamResponse]

// Stream is one persistent stream. Send, Await and Close are called from
// one goroutine; Acked and Acks from any.
type Stream struct {
	cc     *grpc.ClientConn
	cancel context.CancelFunc
	st     bidi
	msg    *ingestpb.PersistentStreamRequest
	off    int64 // the offset msg carries: msg points to it
	sent   int64
	resp   ingestpb.PersistentStreamResponse // reused for every response

	acked atomic.Int64 // the highest offset acknowledged, -1 for none
	acks  atomic.Int64 // ack messages received

	// Set by StartReader: the reader signals reached when acked reaches
	// want, and readErr when the stream ends.
	reader  bool
	want    atomic.Int64
	reached chan struct{}
	readErr chan error
}

// Open dials cfg.Endpoint, opens a persistent stream on the table and
// waits for the create's answer.
func Open(ctx context.Context, cfg Config) (*Stream, error) {
	if cfg.Batch < 1 {
		return nil, fmt.Errorf("rawclient: batch %d is not positive", cfg.Batch)
	}
	cc, err := grpcio.Dial(cfg.Endpoint, grpcio.DialOptions{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Stream{cc: cc, cancel: cancel}
	s.acked.Store(-1)
	if err := s.open(ctx, cfg); err != nil {
		s.Close()
		return nil, err
	}
	s.msg = s.request(cfg.Record, cfg.Batch)
	return s, nil
}

func (s *Stream) open(ctx context.Context, cfg Config) error {
	md := []string{grpcio.HeaderTable, cfg.Table}
	if cfg.Token != "" {
		md = append(md, grpcio.HeaderAuthorization, "Bearer "+cfg.Token)
	}
	if cfg.RequestID != "" {
		md = append(md, grpcio.HeaderRequestID, cfg.RequestID)
	}
	st, err := ingestpb.NewZerobusClient(s.cc).PersistentStream(metadata.AppendToOutgoingContext(ctx, md...))
	if err != nil {
		return err
	}
	s.st = st
	table, rt := cfg.Table, ingestpb.RecordType_JSON
	create := &ingestpb.CreatePersistentStreamRequest{
		CreateStream: &ingestpb.CreateIngestStreamRequest{TableName: &table, RecordType: &rt},
	}
	err = st.Send(&ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_CreateStream{CreateStream: create}})
	if err != nil {
		return err
	}
	if err := st.RecvMsg(&s.resp); err != nil {
		return err
	}
	if s.resp.GetCreateStreamResponse() == nil {
		return fmt.Errorf("rawclient: the create was answered with %v", &s.resp)
	}
	return nil
}

// request builds the one message every call sends: its offset is s.off.
func (s *Stream) request(record []byte, batch int) *ingestpb.PersistentStreamRequest {
	rec := string(record)
	if batch == 1 {
		return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecord{
			IngestRecord: &ingestpb.IngestRecordRequest{OffsetId: &s.off, Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: rec}}}}
	}
	recs := make([]string, batch)
	for i := range recs {
		recs[i] = rec
	}
	return &ingestpb.PersistentStreamRequest{Payload: &ingestpb.PersistentStreamRequest_IngestRecordBatch{
		IngestRecordBatch: &ingestpb.IngestRecordBatchRequest{OffsetId: &s.off, Batch: &ingestpb.IngestRecordBatchRequest_JsonBatch{
			JsonBatch: &ingestpb.JsonRecordBatch{Records: recs}}}}}
}

// Send sends the next call, offset Sent(). gRPC encodes the message
// before SendMsg returns, so reusing it for the next call is safe.
func (s *Stream) Send() error {
	s.off = s.sent
	if err := s.st.SendMsg(s.msg); err != nil {
		return err
	}
	s.sent++
	return nil
}

// Sent is the number of calls sent: the next call's offset.
func (s *Stream) Sent() int64 { return s.sent }

// Acked is the highest offset acknowledged so far, -1 for none.
func (s *Stream) Acked() int64 { return s.acked.Load() }

// Acks is the number of ack messages received: the server merges the acks
// of calls that arrive while it is sending, so acks per call say how much
// of the traffic back was acks.
func (s *Stream) Acks() int64 { return s.acks.Load() }

// recvAck reads responses until an ack and records it.
func (s *Stream) recvAck() (int64, error) {
	for {
		if err := s.st.RecvMsg(&s.resp); err != nil {
			return 0, err
		}
		if a := s.resp.GetIngestRecordResponse(); a != nil {
			o := a.GetDurabilityAckUpToOffset()
			s.acks.Add(1)
			s.acked.Store(o)
			return o, nil
		}
	}
}

// Await reads acks on the calling goroutine until offset is acknowledged:
// the plain way to make a call and wait for its ack, with no other
// goroutine to wake. Not with StartReader.
func (s *Stream) Await(offset int64) error {
	if s.reader {
		return errors.New("rawclient: Await with a reader running: use WaitAcked")
	}
	for s.acked.Load() < offset {
		if _, err := s.recvAck(); err != nil {
			return err
		}
	}
	return nil
}

// StartReader reads the acks on a goroutine from now on, so that the
// sender never stops for them (unread acks would fill the stream's
// receive window and stall the server's sender); WaitAcked waits for
// them.
func (s *Stream) StartReader() {
	s.reader = true
	s.want.Store(1<<63 - 1)
	s.reached = make(chan struct{}, 1)
	s.readErr = make(chan error, 1)
	go func() {
		for {
			o, err := s.recvAck()
			if err != nil {
				s.readErr <- err
				return
			}
			if o >= s.want.Load() {
				select {
				case s.reached <- struct{}{}:
				default:
				}
			}
		}
	}()
}

// WaitAcked waits, with the reader running, until offset is acknowledged,
// the stream ends or ctx ends. The reader and the waiter both check, so
// the wake-up is never lost.
func (s *Stream) WaitAcked(ctx context.Context, offset int64) error {
	s.want.Store(offset)
	for s.acked.Load() < offset {
		select {
		case <-s.reached:
		case err := <-s.readErr:
			s.readErr <- err // for Close
			return fmt.Errorf("rawclient: the stream ended before the ack of %d: %w", offset, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close half-closes the stream, ends it and the reader, and closes the
// connection.
func (s *Stream) Close() error {
	if s.st != nil {
		_ = s.st.CloseSend()
	}
	s.cancel()
	if s.reader {
		<-s.readErr
	}
	return s.cc.Close()
}
