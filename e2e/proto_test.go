package e2e_test

// A proto stream whose message has nested message and enum types (and a
// recursive reference), built at run time with dynamicpb: the descriptor
// the client derives from the message must be one the server can resolve.

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// eventType is, in package acme.v1:
//
//	message Event {
//	  required string name = 1;
//	  optional Inner inner = 2;
//	  optional Kind kind = 3;
//	  repeated Inner more = 4;
//	  message Inner { optional int32 x = 1; optional Event parent = 2; }
//	  enum Kind { KIND_UNSPECIFIED = 0; KIND_A = 1; }
//	}
func eventType(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	req := descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	field := func(name string, n int32, label *descriptorpb.FieldDescriptorProto_Label, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Label: label, Type: typ.Enum()}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name: proto.String("acme/v1/event.proto"), Package: proto.String("acme.v1"), Syntax: proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Event"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("name", 1, req, descriptorpb.FieldDescriptorProto_TYPE_STRING, ""),
				field("inner", 2, opt, *msg, ".acme.v1.Event.Inner"),
				field("kind", 3, opt, descriptorpb.FieldDescriptorProto_TYPE_ENUM, ".acme.v1.Event.Kind"),
				field("more", 4, rep, *msg, ".acme.v1.Event.Inner"),
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name: proto.String("Inner"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("x", 1, opt, descriptorpb.FieldDescriptorProto_TYPE_INT32, ""),
					field("parent", 2, opt, *msg, ".acme.v1.Event"),
				},
			}},
			EnumType: []*descriptorpb.EnumDescriptorProto{{
				Name: proto.String("Kind"),
				Value: []*descriptorpb.EnumValueDescriptorProto{
					{Name: proto.String("KIND_UNSPECIFIED"), Number: proto.Int32(0)},
					{Name: proto.String("KIND_A"), Number: proto.Int32(1)},
				},
			}},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}

func newEvent(t *testing.T, md protoreflect.MessageDescriptor, name string, x int32) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("name"), protoreflect.ValueOfString(name))
	inner := md.Messages().ByName("Inner")
	in := dynamicpb.NewMessage(inner)
	in.Set(inner.Fields().ByName("x"), protoreflect.ValueOfInt32(x))
	parent := dynamicpb.NewMessage(md)
	parent.Set(md.Fields().ByName("name"), protoreflect.ValueOfString("parent of "+name))
	in.Set(inner.Fields().ByName("parent"), protoreflect.ValueOfMessage(parent))
	m.Set(md.Fields().ByName("inner"), protoreflect.ValueOfMessage(in))
	m.Set(md.Fields().ByName("kind"), protoreflect.ValueOfEnum(1))
	l := m.Mutable(md.Fields().ByName("more")).List()
	l.Append(protoreflect.ValueOfMessage(in))
	return m
}

// TestProtoNestedTypes: a persistent proto stream of a message with
// nested types: create, ingest single and batch, resume with the same
// message type, and read back records that decode to what was sent; a
// record missing a required field is refused by the server.
func TestProtoNestedTypes(t *testing.T) {
	e := start(t)
	md := eventType(t)
	s := e.createPersistent(t, zbstream.WithProtoMessage(dynamicpb.NewMessage(md)))
	id := s.StreamID()
	sent := []proto.Message{newEvent(t, md, "a", 1), newEvent(t, md, "b", 2), newEvent(t, md, "c", 3)}
	if off, err := s.IngestProto(ctx(t), sent[0]); err != nil || off != 0 {
		t.Fatalf("IngestProto: %d, %v", off, err)
	}
	if off, err := s.IngestProtoBatch(ctx(t), []zbstream.ProtoMessage{sent[1], sent[2]}); err != nil || off != 1 {
		t.Fatalf("IngestProtoBatch: %d, %v", off, err)
	}
	if _, err := s.IngestProto(ctx(t), &ingestpb.JsonRecordBatch{}); !errors.Is(err, zbstream.ErrRecordType) {
		t.Fatalf("IngestProto of another type: %v", err)
	}
	mustClose(t, s)

	r := e.resume(t, id, zbstream.WithProtoMessage(dynamicpb.NewMessage(md)))
	if r.LastDurable() != 1 {
		t.Fatalf("resume watermark %d, want 1", r.LastDurable())
	}
	last := newEvent(t, md, "d", 4)
	sent = append(sent, last)
	if off, err := r.IngestProto(ctx(t), last); err != nil || off != 2 {
		t.Fatalf("IngestProto after resume: %d, %v", off, err)
	}
	mustClose(t, r)

	var got []proto.Message
	for _, b := range e.stored(t, id) {
		for _, rec := range b.Records {
			m := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(rec, m); err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("%d records stored, want %d", len(got), len(sent))
	}
	for i := range sent {
		if !proto.Equal(got[i], sent[i]) {
			t.Fatalf("record %d stored as %v, want %v", i, got[i], sent[i])
		}
	}

	// Missing the required name: IngestProto refuses to marshal it; sent
	// raw, the server refuses it and the stream fails.
	bad := e.createPersistent(t, zbstream.WithProtoMessage(dynamicpb.NewMessage(md)))
	if _, err := bad.IngestProto(ctx(t), dynamicpb.NewMessage(md)); err == nil {
		t.Fatal("IngestProto of a message without its required field: nil error")
	}
	partial, err := proto.MarshalOptions{AllowPartial: true}.Marshal(dynamicpb.NewMessage(md))
	if err != nil {
		t.Fatal(err)
	}
	ingest(t, bad, partial)
	waitDone(t, bad)
	wantCode(t, bad.Close(ctx(t)), codes.InvalidArgument)
}
