package record_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream/record"
)

// FuzzJSONToProto converts arbitrary input against the table of
// testdata/uc_table.json: a *ConvertError, or a record that decodes with
// its required fields set; never a panic. Where protojson also accepts
// the input, both give the same message.
func FuzzJSONToProto(f *testing.F) {
	for _, seed := range []string{
		`{"id":1}`, `{"id":"9007199254740993","s":"x","bin":"AP8=","f":"NaN","dt":1e2}`,
		`{"id":1,"addr":{"zip":1,"geo":{"lat":1,"lon":null}},"tags":["a"],"items":[{"days":[1]}]}`,
		`{"id":1,"attrs":{"a":1},"by_day":{"7":{"ok":true}},"unit price":1}`,
		`{"id":null}`, `[]`, `{"id":1} x`, `{"id":1e20}`, `{"id":"1e-5"}`, `{"id":1,"tags":[null]}`,
	} {
		f.Add([]byte(seed))
	}
	md := ordersType(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := record.JSONToProto(md, in)
		if err != nil {
			var ce *record.ConvertError
			if !errors.As(err, &ce) || b != nil {
				t.Fatalf("%q: %v (%T), %d bytes", in, err, err, len(b))
			}
			return
		}
		got := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(b, got); err != nil { // checks required fields too
			t.Fatalf("%q: the record does not decode: %v", in, err)
		}
		want := dynamicpb.NewMessage(md)
		if protojson.Unmarshal(in, want) == nil && !proto.Equal(got, want) {
			t.Fatalf("%q: got %v, protojson %v", in, got, want)
		}
	})
}
