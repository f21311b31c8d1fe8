package e2e_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/zbstream/zbstream"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// avroSchemaJSON is the writer schema of the Avro tests.
const avroSchemaJSON = `{"type":"record","name":"Reading","namespace":"acme",
 "fields":[{"name":"seq","type":"long"},{"name":"sensor","type":"string"}]}`

// avroDatum is record i of the Avro tests, encoded.
func avroDatum(t *testing.T, i int64) []byte {
	t.Helper()
	b, err := avro.Marshal(avro.MustParse(avroSchemaJSON), map[string]any{"seq": i, "sensor": "s-1"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAvroStreams: an Avro stream, persistent and ephemeral, takes datums
// one at a time and in batches, says RecordTypeAvro, and the server holds
// exactly the datums sent; a persistent one resumes as Avro.
func TestAvroStreams(t *testing.T) {
	e := start(t)
	for _, persistent := range []bool{true, false} {
		opt := zbstream.WithAvroSchema(avroSchemaJSON)
		var s *zbstream.Stream
		if persistent {
			s = e.createPersistent(t, opt)
		} else {
			s = e.create(t, opt)
		}
		if rt := s.RecordType(); rt != zbstream.RecordTypeAvro || rt.String() != "avro" {
			t.Fatalf("RecordType %v, want avro", rt)
		}
		ingest(t, s, avroDatum(t, 0))
		if _, err := s.IngestBatch(ctx(t), [][]byte{avroDatum(t, 1), avroDatum(t, 2)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.IngestJSON(ctx(t), map[string]int{"seq": 3}); !errors.Is(err, zbstream.ErrRecordType) {
			t.Fatalf("IngestJSON on an Avro stream: %v, want ErrRecordType", err)
		}
		mustClose(t, s)
		e.wantStored(t, s.StreamID(), [][]byte{avroDatum(t, 0)}, [][]byte{avroDatum(t, 1), avroDatum(t, 2)})
		if !persistent {
			continue
		}
		r := e.resume(t, s.StreamID(), opt)
		if r.LastDurable() != 1 || r.RecordType() != zbstream.RecordTypeAvro {
			t.Fatalf("resumed at %d as %v, want 1 and avro", r.LastDurable(), r.RecordType())
		}
		ingest(t, r, avroDatum(t, 3))
		mustClose(t, r)
		e.wantStored(t, s.StreamID(), [][]byte{avroDatum(t, 0)}, [][]byte{avroDatum(t, 1), avroDatum(t, 2)}, [][]byte{avroDatum(t, 3)})
	}
}

// TestAvroBadDatum: a datum that does not decode under the stream's
// schema is refused by the server; the stream fails with the server's
// reason, what came before it is stored, and nothing after it is lost
// silently: the calls that did not land are the stream's Unacked.
func TestAvroBadDatum(t *testing.T) {
	e := start(t)
	s := e.createPersistent(t, zbstream.WithAvroSchema(avroSchemaJSON))
	ingest(t, s, avroDatum(t, 0))
	mustFlush(t, s)
	good := avroDatum(t, 2)
	bad := avroDatum(t, 1)
	bad = bad[:len(bad)-2] // truncated inside the string
	if _, err := s.IngestRecord(ctx(t), bad); err != nil {
		t.Fatal(err)
	}
	// The stream may fail before the next call is accepted: then that call
	// says so; if it was accepted, the stream hands it back.
	_, goodErr := s.IngestRecord(ctx(t), good)
	if goodErr != nil && !errors.Is(goodErr, zbstream.ErrStreamFailed) {
		t.Fatalf("the call after the bad datum: %v, want ErrStreamFailed or acceptance", goodErr)
	}
	waitDone(t, s)
	err := s.Close(ctx(t))
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "avro") {
		t.Fatalf("Close after a bad datum: %v, want the server's Avro reason", err)
	}
	e.wantStored(t, s.StreamID(), [][]byte{avroDatum(t, 0)})
	want := [][]byte{bad}
	if goodErr == nil {
		want = append(want, good)
	}
	left := s.Unacked()
	if len(left) != len(want) {
		t.Fatalf("Unacked %+v, want %d calls: the bad datum and the one after it, if accepted", left, len(want))
	}
	for i, w := range want {
		if string(left[i].Records[0]) != string(w) {
			t.Fatalf("Unacked call %d is %x, want %x", i, left[i].Records[0], w)
		}
	}
}

// TestAvroOptions: the Avro option's mistakes are *ConfigErrors before
// anything is sent.
func TestAvroOptions(t *testing.T) {
	e := start(t)
	var ce *zbstream.ConfigError
	if _, err := e.client.CreateStream(ctx(t), e.table, zbstream.WithAvroSchema(" ")); !errors.As(err, &ce) || ce.Field != "AvroSchema" {
		t.Fatalf("empty schema: %v", err)
	}
	if _, err := e.client.CreateStream(ctx(t), e.table, zbstream.WithAvroSchema(avroSchemaJSON),
		zbstream.WithProtoMessage(&ingestpb.JsonRecordBatch{})); !errors.As(err, &ce) || ce.Field != "RecordType" {
		t.Fatalf("Avro and proto: %v", err)
	}
}
