package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/contract"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server/servertest"
)

// passCodec hands gRPC a message's bytes as they are: the proxy reads and
// forwards frames without a type of its own.
type passCodec struct{}

func (passCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (passCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (passCodec) Name() string { return "proto" }

// contractProxy stands between a client and the reference server and
// reads every message both ways under a descriptor built from the
// service's contract alone (internal/contract): a message that does not
// decode, or carries a field the contract does not know, ends the call
// with INVALID_ARGUMENT, as a service that reads only its contract would
// not act on it. It records every client message it passed, by method and
// top-level field, for the test to check what it saw.
type contractProxy struct {
	addr    string
	methods map[string][2]protoreflect.MessageDescriptor // request, response
	mu      sync.Mutex
	seen    map[string]int // "Method payload-field[/record-field]" -> messages
	bad     []string
}

func startContractProxy(t *testing.T, backend string) *contractProxy {
	t.Helper()
	fd, err := contract.File()
	if err != nil {
		t.Fatal(err)
	}
	p := &contractProxy{methods: map[string][2]protoreflect.MessageDescriptor{}, seen: map[string]int{}}
	svc := fd.Services().ByName("Zerobus")
	for i := range svc.Methods().Len() {
		m := svc.Methods().Get(i)
		// On the wire the service is databricks.zerobus.Zerobus.
		p.methods["/databricks.zerobus.Zerobus/"+string(m.Name())] = [2]protoreflect.MessageDescriptor{m.Input(), m.Output()}
	}
	up, err := grpc.NewClient(backend, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ForceServerCodecV2(passCodec{}), grpc.UnknownServiceHandler(func(_ any, down grpc.ServerStream) error {
		return p.forward(down, up)
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Stop(); up.Close() })
	p.addr = lis.Addr().String()
	return p
}

// forward relays one call, checking every message.
func (p *contractProxy) forward(down grpc.ServerStream, up *grpc.ClientConn) error {
	method, _ := grpc.MethodFromServerStream(down)
	types, ok := p.methods[method]
	if !ok {
		return status.Errorf(codes.Unimplemented, "%s is not in the service's contract", method)
	}
	md, _ := metadata.FromIncomingContext(down.Context())
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(down.Context(), md.Copy()))
	defer cancel()
	us, err := up.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodecV2(passCodec{}))
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { // client to server
		for {
			var b []byte
			if err := down.RecvMsg(&b); err != nil {
				us.CloseSend()
				if errors.Is(err, io.EOF) {
					err = nil
				}
				errc <- err
				return
			}
			if why := p.check(method, types[0], b, true); why != "" {
				errc <- status.Error(codes.InvalidArgument, why)
				return
			}
			if err := us.SendMsg(&b); err != nil {
				errc <- nil // the server ended the call: its status follows below
				return
			}
		}
	}()
	if h, err := us.Header(); err == nil {
		down.SendHeader(h)
	}
	for {
		var b []byte
		if err := us.RecvMsg(&b); err != nil {
			down.SetTrailer(us.Trailer())
			if errors.Is(err, io.EOF) {
				return <-errc
			}
			return err
		}
		if why := p.check(method, types[1], b, false); why != "" {
			return status.Error(codes.Internal, why)
		}
		if err := down.SendMsg(&b); err != nil {
			return err
		}
	}
}

// check decodes b as a message of md and returns why it breaks the
// contract, or "". Client messages are counted.
func (p *contractProxy) check(method string, md protoreflect.MessageDescriptor, b []byte, fromClient bool) string {
	m := dynamicpb.NewMessage(md)
	why := ""
	if err := proto.Unmarshal(b, m); err != nil {
		why = fmt.Sprintf("%s: %s does not decode: %v", method, md.Name(), err)
	} else if path := unknownField(m); path != "" {
		why = fmt.Sprintf("%s: %s carries a field the contract does not have, at %s", method, md.Name(), path)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if why != "" {
		p.bad = append(p.bad, why)
		return why
	}
	if fromClient {
		p.seen[shape(method, m)]++
	}
	return ""
}

// unknownField returns where m or a message inside it holds an unknown
// field ("" when none does).
func unknownField(m protoreflect.Message) string {
	if len(m.GetUnknown()) > 0 {
		return string(m.Descriptor().Name())
	}
	path := ""
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			for i := range v.List().Len() {
				if p := unknownField(v.List().Get(i).Message()); p != "" {
					path = string(fd.Name()) + "." + p
					return false
				}
			}
			return true
		}
		if p := unknownField(v.Message()); p != "" {
			path = string(fd.Name()) + "." + p
			return false
		}
		return true
	})
	return path
}

// shape names a client message by its method and the fields that say what
// it is: the payload, and for an ingest call the kind of its records.
func shape(method string, m protoreflect.Message) string {
	name := method[strings.LastIndex(method, "/")+1:]
	var parts []string
	for m != nil {
		var next protoreflect.Message
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if fd.ContainingOneof() == nil {
				return true
			}
			parts = append(parts, string(fd.Name()))
			if fd.Kind() == protoreflect.MessageKind {
				next = v.Message()
			}
			return false
		})
		m = next
	}
	if name == "RetireStream" {
		return name
	}
	return name + " " + strings.Join(parts, "/")
}

// TestClientSpeaksTheContract: every message the client sends, in both
// stream kinds and every record type (open, resume, one record, a batch,
// retire), decodes under a descriptor built from the service's contract
// alone, with no field the contract lacks; and through such a proxy a
// persistent stream created, fed, resumed by a new client, fed again and
// retired keeps every record once and in order.
func TestClientSpeaksTheContract(t *testing.T) {
	ts := servertest.Start(t)
	p := startContractProxy(t, ts.Addr)
	c, err := zbstream.NewClient("http://"+p.addr, zbstream.WithToken(ts.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	type recordKind struct {
		name string
		opts []zbstream.StreamOption
		rec  func(i int) []byte
	}
	kinds := []recordKind{
		{"json", nil, func(i int) []byte { return fmt.Appendf(nil, `{"seq":%d}`, i) }},
		{"proto", []zbstream.StreamOption{zbstream.WithProtoMessage(&ingestpb.JsonRecordBatch{})}, func(i int) []byte {
			b, err := proto.Marshal(&ingestpb.JsonRecordBatch{Records: []string{fmt.Sprint(i)}})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{"avro", []zbstream.StreamOption{zbstream.WithAvroSchema(avroSchemaJSON)}, func(i int) []byte { return avroDatum(t, int64(i)) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			// Ephemeral: create, one record, a batch.
			es, err := c.CreateStream(ctx(t), ts.Table, k.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ingest(t, es, k.rec(0))
			if _, err := es.IngestBatch(ctx(t), [][]byte{k.rec(1), k.rec(2)}); err != nil {
				t.Fatal(err)
			}
			mustClose(t, es)

			// Persistent: create, feed, a new client resumes, feed, retire.
			ps, err := c.CreatePersistentStream(ctx(t), ts.Table, k.opts...)
			if err != nil {
				t.Fatal(err)
			}
			id := ps.StreamID()
			ingest(t, ps, k.rec(0))
			if _, err := ps.IngestBatch(ctx(t), [][]byte{k.rec(1), k.rec(2)}); err != nil {
				t.Fatal(err)
			}
			mustClose(t, ps)
			c2, err := zbstream.NewClient("http://"+p.addr, zbstream.WithToken(ts.Token))
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			rs, err := c2.ResumeStream(ctx(t), ts.Table, id, k.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := rs.LastDurable(); got != 1 {
				t.Fatalf("resumed at %d, want 1", got)
			}
			ingest(t, rs, k.rec(3))
			mustClose(t, rs)
			if err := c2.RetireStream(ctx(t), ts.Table, id); err != nil {
				t.Fatalf("RetireStream: %v", err)
			}
			m, err := ts.Stream(ctx(t), id)
			if err != nil || !m.Retired || m.Table != ts.Table {
				t.Fatalf("after retire the server has %+v, %v", m, err)
			}
			batches, err := ts.Records(ctx(t), id)
			if err != nil {
				t.Fatal(err)
			}
			want := [][][]byte{{k.rec(0)}, {k.rec(1), k.rec(2)}, {k.rec(3)}}
			if len(batches) != len(want) {
				t.Fatalf("stored %d calls, want %d", len(batches), len(want))
			}
			for i, b := range batches {
				if b.Offset != int64(i) || fmt.Sprint(b.Records) != fmt.Sprint(want[i]) {
					t.Fatalf("call %d: offset %d records %q, want offset %d %q", i, b.Offset, b.Records, i, want[i])
				}
			}
		})
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.bad) > 0 {
		t.Fatalf("messages outside the contract:\n%s", strings.Join(p.bad, "\n"))
	}
	for _, s := range []string{
		"EphemeralStream create_stream",
		"EphemeralStream ingest_record/json_record",
		"EphemeralStream ingest_record/proto_encoded_record",
		"EphemeralStream ingest_record_batch/json_batch",
		"EphemeralStream ingest_record_batch/proto_encoded_batch",
		"EphemeralStream ingest_record/avro_encoded_record",
		"EphemeralStream ingest_record_batch/avro_batch",
		"PersistentStream create_stream",
		"PersistentStream resume_stream/stream_id",
		"PersistentStream ingest_record/json_record",
		"PersistentStream ingest_record/proto_encoded_record",
		"PersistentStream ingest_record_batch/json_batch",
		"PersistentStream ingest_record_batch/proto_encoded_batch",
		"PersistentStream ingest_record/avro_encoded_record",
		"PersistentStream ingest_record_batch/avro_batch",
		"RetireStream",
	} {
		if p.seen[s] == 0 {
			t.Errorf("the proxy saw no %q (saw %v)", s, p.seen)
		}
	}
}
