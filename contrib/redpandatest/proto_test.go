package redpandatest_test

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream/examples/proto/orderpb"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server/servertest"
)

// descriptorSetFile writes fd and its dependencies, as protoc
// --include_imports --descriptor_set_out does, to a file and returns its
// path.
func descriptorSetFile(t *testing.T, fd protoreflect.FileDescriptor) string {
	t.Helper()
	var set descriptorpb.FileDescriptorSet
	seen := map[string]bool{}
	var add func(protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(fd)
	b, err := proto.Marshal(&set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "orders.pb")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProtoRecords: with record_type proto, every message is a serialized
// message of the configured type (read from a descriptor set file): the
// server gets a proto stream of that type and stores the messages as sent.
// A message that is not one of that type (garbage, a JSON object, a field
// of the wrong wire type) fails alone and goes to the dead letter, while
// its batch's other messages land.
func TestProtoRecords(t *testing.T) {
	ts := servertest.Start(t)
	desc := descriptorSetFile(t, orderpb.File_order_proto)
	dead := filepath.Join(t.TempDir(), "dead.bin")
	zb := zerobusYAML(ts, fmt.Sprintf(`  record_type: proto
  proto:
    descriptor_set_file: %s
    message: zbstream.examples.Order
`, desc))
	produce := pipeline(t, fmt.Sprintf(`
fallback:
  - %s
  - file:
      path: %s
      codec: lines
`, strings.ReplaceAll(zb, "\n", "\n    "), dead))

	orders := []*orderpb.Order{
		{Id: proto.Int64(1), Customer: proto.String("ada"), Status: orderpb.Order_PLACED.Enum(),
			Lines: []*orderpb.Order_Line{{Sku: proto.String("tea"), Quantity: proto.Int32(2)}}},
		{Id: proto.Int64(2), Customer: proto.String("grace"), Status: orderpb.Order_SHIPPED.Enum()},
		{Id: proto.Int64(3)},
		{Id: proto.Int64(4), Lines: []*orderpb.Order_Line{{Sku: proto.String("cake")}, {Quantity: proto.Int32(7)}}},
	}
	enc := make([]string, len(orders))
	for i, o := range orders {
		b, err := proto.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		enc[i] = string(b)
	}
	refused := []string{
		"not a proto",              // wire type 6: not protobuf at all
		`{"id":5}`,                 // the JSON form is not a proto record
		string([]byte{0x12, 0x7f}), // customer (field 2) longer than the record
		string([]byte{0x10, 0x01}), // customer (a string) as a varint
	}
	if err := produce(testCtx(t), batch(enc[0], refused[0], enc[1], refused[1])); err != nil {
		t.Fatalf("first batch: %v", err)
	}
	if err := produce(testCtx(t), batch(refused[2], enc[2], refused[3], enc[3])); err != nil {
		t.Fatalf("second batch: %v", err)
	}

	streams, err := ts.Streams(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(streams) != 1 || streams[0].RecordType != int32(ingestpb.RecordType_PROTO) {
		types := make([]string, len(streams))
		for i, st := range streams {
			types[i] = ingestpb.RecordType(st.RecordType).String()
		}
		t.Fatalf("streams of types %v, want one PROTO stream (the records were refused, or a call failed)", types)
	}
	var dp descriptorpb.DescriptorProto
	if err := proto.Unmarshal(streams[0].Descriptor, &dp); err != nil || dp.GetName() != "Order" || len(dp.GetField()) != 4 {
		t.Errorf("the stream's descriptor is %v (%v), want Order's", &dp, err)
	}

	var got []*orderpb.Order
	for _, r := range storedRecords(t, ts) {
		o := new(orderpb.Order)
		if err := proto.Unmarshal([]byte(r), o); err != nil {
			t.Fatalf("stored record %q is not an Order: %v", r, err)
		}
		got = append(got, o)
	}
	slices.SortFunc(got, func(a, b *orderpb.Order) int { return cmp.Compare(a.GetId(), b.GetId()) })
	if len(got) != len(orders) {
		t.Fatalf("stored %d orders %v, want %d", len(got), got, len(orders))
	}
	for i := range orders {
		if !proto.Equal(got[i], orders[i]) {
			t.Errorf("stored order %v, want %v", got[i], orders[i])
		}
	}

	b, err := os.ReadFile(dead)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(string(bytes.TrimSuffix(b, []byte("\n"))), "\n"); strings.Join(got, "|") != strings.Join(refused, "|") {
		t.Errorf("dead letters %q, want %q", got, refused)
	}
}
