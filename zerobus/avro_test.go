//go:build avro

package zerobus_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"

	zerobus "github.com/zbstream/zbstream/zerobus"
)

// The official SDK's Avro API (Beta, the avro build tag), tested with
// go test -tags avro ./zerobus.

// The Avro API's signatures, as the official source has them, added to the
// table TestOfficialMethods checks when the package is built with the tag.
func init() {
	sdk, stream := officialMethods[reflect.TypeFor[*zerobus.ZerobusSdk]()], officialMethods[reflect.TypeFor[*zerobus.ZerobusStream]()]
	sdk["CreateAvroStream"] = "func(*zerobus.ZerobusSdk, zerobus.AvroTableProperties, string, string, *zerobus.StreamConfigurationOptions) (*zerobus.ZerobusStream, error)"
	sdk["CreateAvroStreamWithHeadersProvider"] = "func(*zerobus.ZerobusSdk, zerobus.AvroTableProperties, zerobus.HeadersProvider, *zerobus.StreamConfigurationOptions) (*zerobus.ZerobusStream, error)"
	for name, sig := range map[string]string{
		"IngestAvroBytesOffset":      "func(*zerobus.ZerobusStream, []uint8) (int64, error)",
		"IngestAvroBytesBatchOffset": "func(*zerobus.ZerobusStream, [][]uint8) (int64, error)",
		"IngestAvroBytesNowait":      "func(*zerobus.ZerobusStream, []uint8) error",
		"IngestAvroBytesBatchNowait": "func(*zerobus.ZerobusStream, [][]uint8) error",
		"IngestAvroRecordOffset":     "func(*zerobus.ZerobusStream, zerobus.AvroRecord) (int64, error)",
		"IngestAvroRecordsOffset":    "func(*zerobus.ZerobusStream, []zerobus.AvroRecord) (int64, error)",
		"IngestAvroRecordNowait":     "func(*zerobus.ZerobusStream, zerobus.AvroRecord) error",
		"IngestAvroRecordsNowait":    "func(*zerobus.ZerobusStream, []zerobus.AvroRecord) error",
	} {
		stream[name] = sig
	}
	officialFuncs["func(string, interface {}) map[string]interface {}"] = zerobus.Union
}

const testAvroSchema = `{"type":"record","name":"Click","fields":[{"name":"id","type":"long"},{"name":"page","type":["null","string"]}]}`

// newAvroStream returns an Avro stream of a new SDK on l (the options as a
// program written for the official SDK sets them: default, or Avro).
func newAvroStream(t *testing.T, l *local, o *zerobus.StreamConfigurationOptions) *zerobus.ZerobusStream {
	t.Helper()
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sdk.Free)
	st, err := sdk.CreateAvroStream(zerobus.AvroTableProperties{TableName: testTable, SchemaJSON: testAvroSchema}, testClientID, testClientSecret, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func clickDatum(t *testing.T, id int64, page *string) []byte {
	t.Helper()
	b, err := avro.Marshal(avro.MustParse(testAvroSchema), map[string]any{"id": id, "page": page})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAvroAPI: every Avro call ingests, records and raw datums, single and
// batched, blocking and Nowait; each lands once, in order, as the datum
// of the schema the stream was created with, and the stream is an Avro
// stream underneath.
func TestAvroAPI(t *testing.T) {
	l := startLocalT(t)
	o := zerobus.DefaultStreamConfigurationOptions()
	o.RecordType = zerobus.RecordTypeAvro
	st := newAvroStream(t, l, o)
	if rt := st.Stream().RecordType().String(); rt != "avro" {
		t.Fatalf("record type %s", rt)
	}
	home := "/home"
	if off, err := st.IngestAvroBytesOffset(clickDatum(t, 0, nil)); err != nil || off != 0 {
		t.Fatalf("IngestAvroBytesOffset: %d, %v", off, err)
	}
	if off, err := st.IngestAvroBytesBatchOffset([][]byte{clickDatum(t, 1, &home), clickDatum(t, 2, nil)}); err != nil || off != 1 {
		t.Fatalf("IngestAvroBytesBatchOffset: %d, %v", off, err)
	}
	if off, err := st.IngestAvroRecordOffset(zerobus.AvroRecord{"id": int64(3), "page": zerobus.Union("string", "/a")}); err != nil || off != 2 {
		t.Fatalf("IngestAvroRecordOffset: %d, %v", off, err)
	}
	if off, err := st.IngestAvroRecordsOffset([]zerobus.AvroRecord{{"id": int64(4), "page": nil}, {"id": int64(5), "page": nil}}); err != nil || off != 3 {
		t.Fatalf("IngestAvroRecordsOffset: %d, %v", off, err)
	}
	for _, err := range []error{
		st.IngestAvroBytesNowait(clickDatum(t, 6, nil)),
		st.IngestAvroBytesBatchNowait([][]byte{clickDatum(t, 7, nil)}),
		st.IngestAvroRecordNowait(zerobus.AvroRecord{"id": int64(8), "page": nil}),
		st.IngestAvroRecordsNowait([]zerobus.AvroRecord{{"id": int64(9), "page": nil}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if off, err := st.IngestAvroBytesBatchOffset(nil); err != nil || off != -1 {
		t.Fatalf("empty batch: %d, %v", off, err)
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	a := "/a"
	want := [][]byte{clickDatum(t, 0, nil), clickDatum(t, 1, &home), clickDatum(t, 2, nil), clickDatum(t, 3, &a)}
	for i := int64(4); i < 10; i++ {
		want = append(want, clickDatum(t, i, nil))
	}
	got := storedRecords(t, l.Server, testTable)
	if len(got) != len(want) {
		t.Fatalf("stored %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("record %d: %x, want %x", i, got[i], want[i])
		}
	}
}

// TestAvroMistakes: the Avro API's mistakes are non-retryable errors
// before anything is sent: a schema that is not Avro, a record the schema
// does not take (the batch naming its index), an Avro call on a JSON
// stream, RecordTypeAvro given to CreateStream; and a datum the server
// refuses fails the stream.
func TestAvroMistakes(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	var ze *zerobus.ZerobusError
	_, err = sdk.CreateAvroStream(zerobus.AvroTableProperties{TableName: testTable, SchemaJSON: `{"type":`}, testClientID, testClientSecret, nil)
	if !errors.As(err, &ze) || ze.IsRetryable || !strings.Contains(ze.Message, "parse avro schema") {
		t.Fatalf("bad schema: %v", err)
	}
	o := zerobus.DefaultStreamConfigurationOptions()
	o.RecordType = zerobus.RecordTypeAvro
	_, err = sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, o)
	if !errors.As(err, &ze) || !strings.Contains(ze.Message, "CreateAvroStream") {
		t.Fatalf("RecordTypeAvro to CreateStream: %v", err)
	}

	st := newAvroStream(t, l, nil) // the default options: still Avro
	if _, err := st.IngestAvroRecordOffset(zerobus.AvroRecord{"id": "x"}); !errors.As(err, &ze) || ze.IsRetryable {
		t.Fatalf("a record the schema does not take: %v", err)
	}
	_, err = st.IngestAvroRecordsOffset([]zerobus.AvroRecord{{"id": int64(1), "page": nil}, {"page": nil}})
	if !errors.As(err, &ze) || !strings.Contains(ze.Message, "encode record 1") {
		t.Fatalf("a batch with a bad record: %v", err)
	}
	for _, err := range []error{
		func() error { _, err := st.IngestRecordOffset([]byte{2}); return err }(),
		func() error { _, err := st.IngestRecordsOffset([]interface{}{[]byte{2}}); return err }(),
		st.IngestRecordNowait([]byte{2}),
	} {
		if !errors.As(err, &ze) || !strings.Contains(ze.Message, "does not match") {
			t.Fatalf("the generic calls on an Avro stream: %v, want a record type mismatch", err)
		}
	}
	js := newJSONStream(t, l, nil)
	if _, err := js.IngestAvroBytesOffset([]byte{0}); !errors.As(err, &ze) || !strings.Contains(ze.Message, "not an Avro stream") {
		t.Fatalf("Avro into a JSON stream: %v", err)
	}

	if _, err := st.IngestAvroBytesOffset([]byte{0xff}); err != nil { // a varint that never ends
		t.Fatal(err)
	}
	if err := st.Flush(); err == nil {
		t.Fatal("Flush after a datum the server refuses: no error")
	}
	left, err := st.GetUnackedRecords()
	if err != nil || len(left) != 1 || string(left[0].([]byte)) != "\xff" {
		t.Fatalf("GetUnackedRecords: %v, %v", left, err)
	}
}
