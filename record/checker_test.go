package record_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// eventDescriptor is message acme.Event { required string name = 1;
// optional int64 n = 2; optional Inner inner = 3; optional Color color =
// 4; message Inner { optional int32 x = 1; } enum Color { RED = 0; GREEN
// = 1; } } (proto2, so Color is a closed enum).
func eventDescriptor() *descriptorpb.DescriptorProto {
	dp := &descriptorpb.DescriptorProto{}
	if err := prototext.Unmarshal([]byte(`
		name: "Event"
		field { name: "name"  number: 1 label: LABEL_REQUIRED type: TYPE_STRING }
		field { name: "n"     number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 }
		field { name: "inner" number: 3 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".acme.Event.Inner" }
		field { name: "color" number: 4 label: LABEL_OPTIONAL type: TYPE_ENUM    type_name: ".acme.Event.Color" }
		nested_type { name: "Inner" field { name: "x" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 } }
		enum_type { name: "Color" value { name: "RED" number: 0 } value { name: "GREEN" number: 1 } }
	`), dp); err != nil {
		panic(err)
	}
	return dp
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Hand-encoded fields of acme.Event.
func name(s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), s)
}

func varintField(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func inner(b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), b)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestCheckerJSON(t *testing.T) {
	c, err := record.NewChecker(ingestpb.RecordType_JSON, []byte("ignored"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Type() != ingestpb.RecordType_JSON {
		t.Fatalf("Type() = %s", c.Type())
	}
	for _, tc := range []struct {
		rec  string
		want error
	}{
		{`{}`, nil},
		{" \t\r\n{\"a\":[1,{\"b\":null}]} \n", nil},
		{`{"a":"é"}`, nil},
		{``, record.ErrNotObject},
		{`   `, record.ErrNotObject},
		{`[1]`, record.ErrNotObject},
		{`"s"`, record.ErrNotObject},
		{`null`, record.ErrNotObject},
		{"\xef\xbb\xbf{}", record.ErrNotObject}, // a byte-order mark is not white space
		{"{\"a\":\"\xff\"}", record.ErrInvalidUTF8},
		{"{\"a\":1}\xff", record.ErrInvalidUTF8},
		{`{"a":1`, record.ErrInvalidJSON},
		{`{}{}`, record.ErrInvalidJSON},
		{`{"a":01}`, record.ErrInvalidJSON},
		{`{a:1}`, record.ErrInvalidJSON},
	} {
		for name, check := range map[string]func([]byte) error{"CheckJSON": record.CheckJSON, "Check": c.Check} {
			if err := check([]byte(tc.rec)); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("%s(%q) = %v, want %v", name, tc.rec, err, tc.want)
			}
		}
	}
}

func TestCheckerProto(t *testing.T) {
	c, err := record.NewChecker(ingestpb.RecordType_PROTO, mustMarshal(t, eventDescriptor()))
	if err != nil {
		t.Fatal(err)
	}
	if c.Type() != ingestpb.RecordType_PROTO {
		t.Fatalf("Type() = %s", c.Type())
	}
	for _, tc := range []struct {
		what string
		rec  []byte
		bad  string // a part of the error, "" for a valid record
	}{
		{"name only", name("a"), ""},
		{"every field", cat(name("a"), varintField(2, 1), inner(varintField(1, 7)), varintField(4, 1)), ""},
		{"the required name missing", varintField(2, 1), "required field"},
		{"empty", nil, "required field"},
		{"a field the descriptor lacks", cat(name("a"), varintField(9, 1)), "fields unknown to the descriptor in acme.Event"},
		{"a nested field the descriptor lacks", cat(name("a"), inner(varintField(9, 1))), "fields unknown to the descriptor in acme.Event.Inner"},
		{"a value outside the closed enum", cat(name("a"), varintField(4, 5)), "not a value of the closed enum acme.Event.Color"},
		{"not protobuf", []byte{0xff, 0xff, 0xff}, "cannot parse"},
		{"a JSON record", []byte(`{"name":"a"}`), "cannot parse"},
	} {
		err := c.Check(tc.rec)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%s: %v", tc.what, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s: %v, want an error with %q", tc.what, err, tc.bad)
		}
	}
}

func TestNewCheckerRefuses(t *testing.T) {
	for _, tc := range []struct {
		what string
		typ  ingestpb.RecordType
		desc []byte
		want string
	}{
		{"PROTO without a descriptor", ingestpb.RecordType_PROTO, nil, "requires descriptor_proto"},
		{"PROTO with bytes that are no descriptor", ingestpb.RecordType_PROTO, []byte{0xff}, "invalid descriptor_proto"},
		{"PROTO with a nameless message", ingestpb.RecordType_PROTO, mustMarshal(t, &descriptorpb.DescriptorProto{Field: eventDescriptor().Field[1:2]}), "message has no name"},
		{"PROTO with a type it cannot resolve", ingestpb.RecordType_PROTO, mustMarshal(t, &descriptorpb.DescriptorProto{
			Name: proto.String("M"),
			Field: []*descriptorpb.FieldDescriptorProto{{Name: proto.String("o"), Number: proto.Int32(1),
				Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".other.Outside")}},
		}), "invalid descriptor_proto"},
		{"RECORD_TYPE_UNSPECIFIED", ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED, nil, "RECORD_TYPE_UNSPECIFIED"},
		{"an unknown record type", ingestpb.RecordType(7), nil, "unknown record_type 7"},
	} {
		if _, err := record.NewChecker(tc.typ, tc.desc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.what, err, tc.want)
		}
	}
}

// TestMessageDescriptor: the package of a message is inferred from the
// references to it, and well-known types resolve.
func TestMessageDescriptor(t *testing.T) {
	md, err := record.MessageDescriptor(mustMarshal(t, eventDescriptor()))
	if err != nil {
		t.Fatal(err)
	}
	if md.FullName() != "acme.Event" {
		t.Errorf("inferred %s, want acme.Event", md.FullName())
	}
	self := &descriptorpb.DescriptorProto{
		Name: proto.String("Node"),
		Field: []*descriptorpb.FieldDescriptorProto{
			{Name: proto.String("next"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".a.b.Node")},
			{Name: proto.String("at"), Number: proto.Int32(2), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".google.protobuf.Timestamp")},
		},
	}
	md, err = record.MessageDescriptor(mustMarshal(t, self))
	if err != nil {
		t.Fatal(err)
	}
	if md.FullName() != "a.b.Node" || md.Fields().ByName("at").Message().FullName() != "google.protobuf.Timestamp" {
		t.Errorf("got %s with at of %s", md.FullName(), md.Fields().ByName("at").Message().FullName())
	}
	plain, err := record.MessageDescriptor(mustMarshal(t, &descriptorpb.DescriptorProto{Name: proto.String("Empty")}))
	if err != nil || plain.FullName() != "Empty" {
		t.Errorf("a message without references: %v, %v", plain, err)
	}
}

func TestSameDescriptor(t *testing.T) {
	d := eventDescriptor()
	a := mustMarshal(t, d)
	// The same message serialized otherwise: its name after its fields
	// (a message followed by another merges with it).
	noName := proto.Clone(d).(*descriptorpb.DescriptorProto)
	noName.Name = nil
	b := cat(mustMarshal(t, noName), mustMarshal(t, &descriptorpb.DescriptorProto{Name: d.Name}))
	changed := proto.Clone(d).(*descriptorpb.DescriptorProto)
	changed.Field[1].Number = proto.Int32(5)
	for _, tc := range []struct {
		what string
		x, y []byte
		want bool
	}{
		{"the same bytes", a, a, true},
		{"serialized otherwise", a, b, true},
		{"a changed field", a, mustMarshal(t, changed), false},
		{"bytes that are no descriptor", a, []byte{0xff}, false},
	} {
		if got := record.SameDescriptor(tc.x, tc.y); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.what, got, tc.want)
		}
	}
}

// TestCheckCall: the first refused record of a call, named as the server
// names it, wrapping Check's reason.
func TestCheckCall(t *testing.T) {
	c, err := record.NewChecker(ingestpb.RecordType_JSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		recs []string
		want string
		is   error
	}{
		{[]string{`{}`}, "", nil},
		{[]string{`{}`, `{"a":1}`}, "", nil},
		{[]string{`[]`}, "invalid JSON record: not a JSON object", record.ErrNotObject},
		{[]string{`{}`, "{\"\xff\":1}", `x`}, "invalid JSON record 1 of the batch: invalid UTF-8", record.ErrInvalidUTF8},
	} {
		recs := make([][]byte, len(tc.recs))
		for i, r := range tc.recs {
			recs[i] = []byte(r)
		}
		err := c.CheckCall(recs)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.recs, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
			t.Errorf("%q: %v, want %q", tc.recs, err, tc.want)
		}
	}
}
