package server_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

// TestRecordChecker: the exported checker refuses what a stream refuses,
// with the reasons a caller can tell apart.
func TestRecordChecker(t *testing.T) {
	c, err := server.NewRecordChecker(ingestpb.RecordType_JSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	for rec, want := range map[string]error{
		`{"a":"é"}`:        nil,
		"{\"a\":\"\xff\"}": server.ErrInvalidUTF8,
		`[1]`:              server.ErrNotObject,
		`{"a":1`:           server.ErrInvalidJSON,
	} {
		if err := c.Check([]byte(rec)); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("%q: %v, want %v", rec, err, want)
		}
	}

	p, err := server.NewRecordChecker(ingestpb.RecordType_PROTO, mustMarshal(t, eventDescriptor()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(eventRecord(t, "a", 1)); err != nil {
		t.Fatalf("a valid record: %v", err)
	}
	// A field the descriptor lacks decodes (as an unknown field) but is
	// refused, as the stream refuses it.
	unknown := protowire.AppendVarint(protowire.AppendTag(eventRecord(t, "a", 1), 9, protowire.VarintType), 1)
	if err := p.Check(unknown); err == nil {
		t.Fatal("a field unknown to the descriptor was accepted")
	}
	if _, err := server.NewRecordChecker(ingestpb.RecordType_PROTO, nil); err == nil {
		t.Fatal("PROTO without a descriptor was accepted")
	}
}
