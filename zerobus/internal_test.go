package zerobus

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/examples/proto/orderpb"
)

// TestEffectiveOptions: nil is the defaults, zero fields take theirs, and
// Recovery false holds only beside a non-zero recovery number, as in the
// official SDK.
func TestEffectiveOptions(t *testing.T) {
	def := *DefaultStreamConfigurationOptions()
	if got := (*StreamConfigurationOptions)(nil).effective(); got != def {
		t.Errorf("nil: %+v", got)
	}
	if got := (&StreamConfigurationOptions{}).effective(); got != def {
		t.Errorf("zero: %+v", got)
	}
	if got := (&StreamConfigurationOptions{Recovery: false, RecoveryRetries: 2}).effective(); got.Recovery || got.RecoveryRetries != 2 || got.RecoveryBackoffMs != 2000 {
		t.Errorf("recovery off with retries: %+v", got)
	}
	wait := uint64(0)
	got := (&StreamConfigurationOptions{RecordType: RecordTypeJson, FlushTimeoutMs: 7, StreamPausedMaxWaitTimeMs: &wait}).effective()
	if got.RecordType != RecordTypeJson || got.FlushTimeoutMs != 7 || !got.Recovery || got.StreamPausedMaxWaitTimeMs == &wait || *got.StreamPausedMaxWaitTimeMs != 0 {
		t.Errorf("set fields: %+v", got)
	}
	if inflightBytes != core.DefaultMaxInflightBytes {
		t.Errorf("inflightBytes %d, the client's default %d", inflightBytes, core.DefaultMaxInflightBytes)
	}
	if millis(1<<63) <= 0 || millis(1500).Milliseconds() != 1500 {
		t.Error("millis")
	}
}

// TestMessageOf: descriptor bytes made as the official examples make them
// become a message of the same full name, fields and nested types, which
// the zbstream client accepts; a descriptor that refers outside itself is
// refused.
func TestMessageOf(t *testing.T) {
	md := (&orderpb.Order{}).ProtoReflect().Descriptor()
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(md.ParentFile()).MessageType[0])
	if err != nil {
		t.Fatal(err)
	}
	m, err := messageOf(b)
	if err != nil {
		t.Fatal(err)
	}
	got := m.ProtoReflect().Descriptor()
	if got.FullName() != md.FullName() || got.Fields().Len() != md.Fields().Len() || got.Enums().Len() != 1 {
		t.Fatalf("got %s with %d fields", got.FullName(), got.Fields().Len())
	}
	if !proto.Equal(protodesc.ToDescriptorProto(got), protodesc.ToDescriptorProto(md)) {
		t.Error("the descriptor changed on the way")
	}
	if err := zbstream.CheckProtoDescriptor(got); err != nil {
		t.Error(err)
	}
	// Without a package, and a proto3 descriptor.
	plain := &descriptorpb.DescriptorProto{Name: proto.String("Plain"), Field: []*descriptorpb.FieldDescriptorProto{{
		Name: proto.String("n"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Proto3Optional: proto.Bool(true), OneofIndex: proto.Int32(0),
	}}, OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("_n")}}}
	pb, _ := proto.Marshal(plain)
	if m, err := messageOf(pb); err != nil || m.ProtoReflect().Descriptor().FullName() != "Plain" {
		t.Fatalf("proto3 without a package: %v", err)
	}
	// A field of a type outside the message.
	ts := protodesc.ToDescriptorProto((&timestamppb.Timestamp{}).ProtoReflect().Descriptor())
	ts.Name = proto.String("Outer")
	ts.Field = append(ts.Field, &descriptorpb.FieldDescriptorProto{
		Name: proto.String("at"), Number: proto.Int32(9), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), TypeName: proto.String(".google.protobuf.Timestamp"),
	})
	ob, _ := proto.Marshal(ts)
	if _, err := messageOf(ob); err == nil {
		t.Fatal("a descriptor referring outside itself was accepted")
	}
	if _, err := messageOf(nil); err == nil {
		t.Fatal("an empty descriptor was accepted")
	}
}

// TestProxyEnvironment: the official SDK's variables, order and exceptions.
func TestProxyEnvironment(t *testing.T) {
	for _, v := range append(append([]string{}, proxyVars...), noProxyVars...) {
		t.Setenv(v, "")
	}
	ep := zbstream.Endpoint{Host: "1234.zerobus.example.com", Port: "443"}
	check := func(want string) {
		t.Helper()
		u, err := proxyFromEnvironment(ep)
		got := ""
		if u != nil {
			got = u.String()
		}
		if err != nil || got != want {
			t.Fatalf("proxy %q (%v), want %q", got, err, want)
		}
	}
	check("")
	t.Setenv("HTTP_PROXY", "http://plain:1")
	check("http://plain:1") // also for a TLS endpoint, as the official SDK
	t.Setenv("https_proxy", "secure:2")
	check("http://secure:2")
	t.Setenv("grpc_proxy", "http://grpc:3")
	check("http://grpc:3")
	t.Setenv("NO_PROXY", "example.com")
	check("")
	t.Setenv("no_grpc_proxy", "other.org") // wins over NO_PROXY
	check("http://grpc:3")
	t.Setenv("grpc_proxy", "http://[bad")
	check("") // not a URL: direct, as the official SDK
	for _, c := range []struct {
		host, list string
		want       bool
	}{
		{"a.example.com", "*", true}, {"example.com", ".example.com", true}, {"a.example.com", " x.org, example.com", true},
		{"notexample.com", "example.com", false}, {"example.com", "", false},
	} {
		if noProxy(c.host, c.list) != c.want {
			t.Errorf("noProxy(%q, %q) != %v", c.host, c.list, c.want)
		}
	}
}
