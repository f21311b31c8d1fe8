package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

const testAvroSchema = `{"type": "record", "name": "Event", "namespace": "acme", "fields": [
	{"name": "id", "type": "long"},
	{"name": "n", "type": "int"},
	{"name": "ok", "type": "boolean"},
	{"name": "f", "type": "float"},
	{"name": "d", "type": "double"},
	{"name": "s", "type": "string"},
	{"name": "b", "type": "bytes"},
	{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
	{"name": "h", "type": {"type": "fixed", "name": "Hash", "size": 2}},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "attrs", "type": {"type": "map", "values": "long"}},
	{"name": "opt", "type": ["null", "string"]},
	{"name": "none", "type": "null"},
	{"name": "next", "type": ["null", "Event"]}
]}`

type testEvent struct {
	ID    int64            `avro:"id"`
	N     int32            `avro:"n"`
	OK    bool             `avro:"ok"`
	F     float32          `avro:"f"`
	D     float64          `avro:"d"`
	S     string           `avro:"s"`
	B     []byte           `avro:"b"`
	Kind  string           `avro:"kind"`
	H     [2]byte          `avro:"h"`
	Tags  []string         `avro:"tags"`
	Attrs map[string]int64 `avro:"attrs"`
	Opt   *string          `avro:"opt"`
	None  any              `avro:"none"`
	Next  *testEvent       `avro:"next"`
}

func marshalEvent(t *testing.T, e testEvent) []byte {
	t.Helper()
	b, err := avro.Marshal(avro.MustParse(testAvroSchema), e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAvroJSON(t *testing.T) {
	a, err := newAvroJSON(testAvroSchema)
	if err != nil {
		t.Fatal(err)
	}
	opt := "o\"<\n"
	full := testEvent{ID: -5, N: 7, OK: true, F: 1.5, D: math.Inf(-1), S: "héllo", B: []byte{0, 0x7f, 0xe9}, Kind: "B",
		H: [2]byte{'h', 0xff}, Tags: []string{"x", "y"}, Attrs: map[string]int64{"k": 9}, Opt: &opt,
		Next: &testEvent{Kind: "A", D: math.NaN(), Tags: []string{}, Attrs: map[string]int64{}}}
	for _, tc := range []struct {
		e    testEvent
		want string
	}{
		{testEvent{Kind: "A", Tags: []string{}, Attrs: map[string]int64{}},
			`{"id":0,"n":0,"ok":false,"f":0,"d":0,"s":"","b":"","kind":"A","h":"\u0000\u0000","tags":[],"attrs":{},"opt":null,"none":null,"next":null}`},
		{full, `{"id":-5,"n":7,"ok":true,"f":1.5,"d":"-Infinity","s":"héllo","b":"\u0000` + "\x7f" + `é","kind":"B","h":"hÿ","tags":["x","y"],"attrs":{"k":9},` +
			`"opt":{"string":"o\"<\n"},"none":null,"next":{"acme.Event":{"id":0,"n":0,"ok":false,"f":0,"d":"NaN","s":"","b":"","kind":"A","h":"\u0000\u0000","tags":[],"attrs":{},"opt":null,"none":null,"next":null}}}`},
	} {
		d := marshalEvent(t, tc.e)
		got, err := a.render(d)
		if err != nil {
			t.Fatalf("%x: %v", d, err)
		}
		if string(got) != tc.want {
			t.Fatalf("got  %s\nwant %s", got, tc.want)
		}
		if !json.Valid(got) {
			t.Fatalf("not JSON: %s", got)
		}
		// What does not decode completely is not shown as JSON.
		if _, err := a.render(d[:len(d)-1]); err == nil {
			t.Fatalf("truncated %x rendered", d)
		}
		if _, err := a.render(append(bytes.Clone(d), 0)); err == nil {
			t.Fatalf("%x with a byte more rendered", d)
		}
	}
}

// TestAvroJSONBounded: a datum of a few bytes that claims a huge array of
// nulls, or nesting past the bound, is refused, not rendered.
func TestAvroJSONBounded(t *testing.T) {
	a, err := newAvroJSON(`{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"null"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.render([]byte{6, 0}); err != nil || string(got) != `{"a":[null,null,null]}` {
		t.Fatalf("three nulls: %s %v", got, err)
	}
	if _, err := a.render([]byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}); err == nil {
		t.Fatal("2^63-1 nulls rendered")
	}
	list, err := newAvroJSON(`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := list.render(append(bytes.Repeat([]byte{2}, 2*maxAvroDepth), 0)); err == nil {
		t.Fatal("deep datum rendered")
	}
}

// TestAdminAvroStream: the admin API shows an Avro stream's type, its
// schema and its records decoded as JSON; a record that does not decode
// as bytes.
func TestAdminAvroStream(t *testing.T) {
	st := server.NewMemoryStore()
	defer st.Close()
	ctx := context.Background()
	if _, _, err := st.CreateStream(ctx, server.StreamMeta{ID: "ps-avro", Kind: server.KindPersistent, Table: clitest.TableA,
		Principal: "anonymous", RecordType: int32(ingestpb.RecordType_AVRO), AvroSchema: testAvroSchema}); err != nil {
		t.Fatal(err)
	}
	one := marshalEvent(t, testEvent{ID: 1, S: "one", Kind: "A"})
	bad := []byte{0x01}
	if err := st.Append(ctx, "ps-avro", []server.Batch{{Offset: 0, Records: [][]byte{one}}, {Offset: 1, Records: [][]byte{one, bad}}}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(NewHandler(st, nil, slog.New(slog.DiscardHandler), DefaultLimits()))
	defer ts.Close()
	var info StreamInfo
	if code := get(t, ts, "GET", "/v1/streams/ps-avro", "", &info); code != 200 || info.RecordType != "avro" {
		t.Fatalf("stream: %d %+v", code, info)
	}
	if !bytes.Equal(CompactJSON(info.AvroSchema), CompactJSON([]byte(testAvroSchema))) {
		t.Fatalf("schema %s", info.AvroSchema)
	}
	var p RecordsPage
	if code := get(t, ts, "GET", "/v1/streams/ps-avro/records", "", &p); code != 200 || len(p.Records) != 3 {
		t.Fatalf("records: %d %+v", code, p)
	}
	var rec map[string]any
	if err := json.Unmarshal(p.Records[1].JSON, &rec); err != nil || rec["s"] != "one" || rec["id"] != 1.0 || p.Records[1].Data != nil {
		t.Fatalf("record 1: %v %s", err, p.Records[1].JSON)
	}
	if p.Records[2].JSON != nil || !bytes.Equal(p.Records[2].Data, bad) {
		t.Fatalf("record that does not decode: %+v", p.Records[2])
	}
}
