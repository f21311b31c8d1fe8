package zbstream_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zbstream/zbstream"
)

// TestWithJSONToProtoConfig: a nil or unresolvable descriptor, or
// WithJSONToProto with another record type, is a *ConfigError before
// anything is dialled.
func TestWithJSONToProtoConfig(t *testing.T) {
	c, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	desc, err := zbstream.DescriptorFromColumns([]zbstream.Column{{Name: "a", TypeName: "INT"}})
	if err != nil {
		t.Fatal(err)
	}
	unresolved := &descriptorpb.DescriptorProto{Name: proto.String("M"), Field: []*descriptorpb.FieldDescriptorProto{{
		Name: proto.String("x"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(),
		TypeName: proto.String(".other.Type"), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
	}}}
	for name, opts := range map[string][]zbstream.StreamOption{
		"nil":        {zbstream.WithJSONToProto(nil)},
		"unresolved": {zbstream.WithJSONToProto(unresolved)},
		"then proto": {zbstream.WithJSONToProto(desc), zbstream.WithProtoMessage(&timestamppb.Timestamp{})},
		"proto then": {zbstream.WithProtoMessage(&timestamppb.Timestamp{}), zbstream.WithJSONToProto(desc)},
		"with avro":  {zbstream.WithJSONToProto(desc), zbstream.WithAvroSchema(`{"type":"record","name":"r","fields":[]}`)},
	} {
		var ce *zbstream.ConfigError
		if _, err := c.CreateStream(t.Context(), "main.demo.events", opts...); !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConfigError", name, err)
		}
	}
}
