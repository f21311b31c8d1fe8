package server

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

// avroTestSchema has every Avro type, named types referred to by name, a
// recursive record and fields that take no bytes.
const avroTestSchema = `{"type": "record", "name": "Event", "namespace": "acme", "fields": [
	{"name": "id", "type": "long"},
	{"name": "n", "type": "int"},
	{"name": "ok", "type": "boolean"},
	{"name": "f", "type": "float"},
	{"name": "d", "type": "double"},
	{"name": "s", "type": "string"},
	{"name": "b", "type": "bytes"},
	{"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
	{"name": "h", "type": {"type": "fixed", "name": "Hash", "size": 4}},
	{"name": "tags", "type": {"type": "array", "items": "string"}},
	{"name": "attrs", "type": {"type": "map", "values": "Kind"}},
	{"name": "opt", "type": ["null", "string"]},
	{"name": "nothing", "type": "null"},
	{"name": "next", "type": ["null", "Event"]}
]}`

type avroTestEvent struct {
	ID      int64             `avro:"id"`
	N       int32             `avro:"n"`
	OK      bool              `avro:"ok"`
	F       float32           `avro:"f"`
	D       float64           `avro:"d"`
	S       string            `avro:"s"`
	B       []byte            `avro:"b"`
	Kind    string            `avro:"kind"`
	H       [4]byte           `avro:"h"`
	Tags    []string          `avro:"tags"`
	Attrs   map[string]string `avro:"attrs"`
	Opt     *string           `avro:"opt"`
	Nothing any               `avro:"nothing"`
	Next    *avroTestEvent    `avro:"next"`
}

func mustAvroChecker(t testing.TB, schema string) *avroChecker {
	t.Helper()
	c, err := newAvroChecker(schema)
	if err != nil {
		t.Fatalf("schema refused: %v", err)
	}
	return c
}

func avroTestDatums(t testing.TB) [][]byte {
	t.Helper()
	s := avro.MustParse(avroTestSchema)
	opt := "é"
	events := []avroTestEvent{
		{Kind: "A", Tags: []string{}, Attrs: map[string]string{}},
		{ID: -1 << 63, N: -1 << 31, OK: true, F: 1.5, D: -2.25, S: "héllo", B: []byte{0, 0xff}, Kind: "C",
			H: [4]byte{1, 2, 3, 4}, Tags: []string{"a", "", "ccc"}, Attrs: map[string]string{"x": "B", "": "A"}, Opt: &opt,
			Next: &avroTestEvent{ID: 1<<63 - 1, N: 1<<31 - 1, Kind: "B", Tags: []string{"z"}, Attrs: map[string]string{}}},
	}
	var out [][]byte
	for _, e := range events {
		b, err := avro.Marshal(s, e)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		out = append(out, b)
	}
	return out
}

func TestAvroSchemaChecks(t *testing.T) {
	mustAvroChecker(t, avroTestSchema)
	mustAvroChecker(t, `{"type":"record","name":"Empty","fields":[]}`)
	for schema, want := range map[string]string{
		``:                    "record_type AVRO requires avro_schema_json",
		`{"type":"record"`:    "avro_schema_json is not valid JSON",
		`string`:              "avro_schema_json is not valid JSON",
		`{"type":"record"} x`: "avro_schema_json is not valid JSON",
		"{\"type\":\"record\",\"name\":\"\xff\"}": "avro_schema_json is not valid UTF-8",
		`"string"`:                                `must be an Avro record schema; it is of type "string"`,
		`["null","int"]`:                          `it is of type "union"`,
		`{"type":"array","items":"int"}`:          `it is of type "array"`,
		`{"type":"error","name":"E","fields":[]}`: `it is of type "error"`,
		`{"type":"record","name":"R"}`:            "invalid avro_schema_json: avro: record must have an array of fields",
		`{"type":"record","name":"R","fields":[{"name":"a","type":"x"}]}`:                                                             "invalid avro_schema_json: avro: unknown type: x",
		`{"type":"record","name":"R","fields":[{"name":"r","type":"R"}]}`:                                                             "record R contains itself with no union, array or map between",
		`{"type":"record","name":"R","fields":[{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"r","type":"R"}]}}]}`: "contains itself",
	} {
		_, err := newAvroChecker(schema)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("schema %q: error %v, want %q", schema, err, want)
		}
	}
}

// TestAvroSchemaCacheIsPerStream: a name one stream's schema defines does
// not resolve in another's.
func TestAvroSchemaCacheIsPerStream(t *testing.T) {
	mustAvroChecker(t, `{"type":"record","name":"First","fields":[{"name":"k","type":{"type":"enum","name":"Shared","symbols":["X"]}}]}`)
	if _, err := newAvroChecker(`{"type":"record","name":"Second","fields":[{"name":"k","type":"Shared"}]}`); err == nil {
		t.Fatal("a name of another stream's schema resolved")
	}
}

func TestAvroDatumsAccepted(t *testing.T) {
	c := mustAvroChecker(t, avroTestSchema)
	for _, d := range avroTestDatums(t) {
		if err := c.CheckCall([][]byte{d}); err != nil {
			t.Fatalf("%x refused: %v", d, err)
		}
		// Avro's encoding delimits itself: no proper prefix of a datum is
		// one, and a byte more is left over.
		for cut := range len(d) {
			if err := c.check(d[:cut]); err == nil {
				t.Fatalf("prefix %x of %x accepted", d[:cut], d)
			}
		}
		if err := c.check(append(bytes.Clone(d), 0)); err == nil || !strings.Contains(err.Error(), "1 bytes left over") {
			t.Fatalf("trailing byte: %v", err)
		}
	}
}

func TestAvroDatumsRefused(t *testing.T) {
	c := mustAvroChecker(t, `{"type":"record","name":"R","fields":[
		{"name":"ok","type":"boolean"},
		{"name":"n","type":"int"},
		{"name":"s","type":"string"},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
		{"name":"u","type":["null","long"]},
		{"name":"a","type":{"type":"array","items":"int"}},
		{"name":"m","type":{"type":"map","values":"double"}}]}`)
	// ok=true n=1 s="" e=A u=null a=[] m={}
	good := []byte{1, 2, 0, 0, 0, 0, 0}
	if err := c.check(good); err != nil {
		t.Fatalf("good datum refused: %v", err)
	}
	for name, tc := range map[string]struct {
		datum []byte
		want  string
	}{
		"empty":             {nil, "datum ends where a boolean should be (byte 0, field ok)"},
		"bool 2":            {[]byte{2, 2, 0, 0, 0, 0, 0}, "boolean byte 0x02 is neither 0 nor 1 (byte 0, field ok)"},
		"int overflow":      {[]byte{1, 0xff, 0xff, 0xff, 0xff, 0x1f, 0, 0, 0, 0, 0}, "int does not fit in 32 bits (byte 1, field n)"},
		"long overflow":     {append([]byte{1, 2, 0, 0, 2}, bytes.Repeat([]byte{0xff}, 10)...), "long does not fit in 64 bits (byte 5, field u)"},
		"truncated int":     {[]byte{1, 0x80}, "datum ends inside a int (byte 1, field n)"},
		"negative length":   {[]byte{1, 2, 1, 0, 0, 0, 0}, "negative string length -1 (byte 2, field s)"},
		"string too long":   {[]byte{1, 2, 10, 'a'}, "datum ends inside a string of 5 bytes: 1 left (byte 2, field s)"},
		"invalid UTF-8":     {[]byte{1, 2, 2, 0xff, 0, 0, 0, 0}, "string is not valid UTF-8 (byte 2, field s)"},
		"enum index":        {[]byte{1, 2, 0, 4, 0, 0, 0}, "enum E has no symbol 2 (it has 2) (byte 3, field e)"},
		"union branch":      {[]byte{1, 2, 0, 0, 4, 0, 0}, "union has no branch 2 (it has 2) (byte 4, field u)"},
		"negative union":    {[]byte{1, 2, 0, 0, 1, 0, 0}, "union has no branch -1"},
		"array unended":     {[]byte{1, 2, 0, 0, 0, 2, 6}, "datum ends inside a long (byte 7, field a)"},
		"array item":        {[]byte{1, 2, 0, 0, 0, 4, 6, 0x80}, "datum ends inside a int (byte 7, field a[1])"},
		"huge count":        {[]byte{1, 2, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0, 0}, "datum ends inside a block of 2147483647 items: 2 bytes left (byte 5, field a)"},
		"block size":        {[]byte{1, 2, 0, 0, 0, 1, 4, 2, 0, 0}, "block size 2, but its items take 1 bytes (byte 7, field a)"},
		"negative size":     {[]byte{1, 2, 0, 0, 0, 1, 3, 2, 0, 0}, "negative block size -2 (byte 6, field a)"},
		"map value":         {[]byte{1, 2, 0, 0, 0, 0, 2, 2, 'k', 1, 2}, `datum ends inside a double of 8 bytes: 2 left (byte 9, field m["k"])`},
		"map key":           {[]byte{1, 2, 0, 0, 0, 0, 2, 2, 0xc3}, "string is not valid UTF-8 (byte 7, field m[key 0])"},
		"trailing bytes":    {append(bytes.Clone(good), 1, 2), "2 bytes left over after the datum (byte 7)"},
		"a JSON record":     {[]byte(`{"ok":true}`), "boolean byte 0x7b is neither 0 nor 1"},
		"min count":         {append([]byte{1, 2, 0, 0, 0}, append(bytes.Repeat([]byte{0xff}, 9), 0x01)...), "block count -9223372036854775808 is out of range (byte 5, field a)"},
		"not a long at all": {[]byte{1, 2, 0, 0, 2}, "datum ends inside a long (byte 5, field u)"},
	} {
		err := c.check(tc.datum)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %x: error %v, want %q", name, tc.datum, err, tc.want)
		}
	}
}

func TestAvroCheckCallMessages(t *testing.T) {
	c := mustAvroChecker(t, `{"type":"record","name":"R","fields":[{"name":"n","type":"long"}]}`)
	if err := c.CheckCall([][]byte{{2}}); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckCall([][]byte{{}}); err == nil || err.Error() != "invalid AVRO record: datum ends inside a long (byte 0, field n)" {
		t.Fatalf("single: %v", err)
	}
	if err := c.CheckCall([][]byte{{2}, {2}, {2, 2}}); err == nil || err.Error() != "invalid AVRO record 2 of the batch: 1 bytes left over after the datum (byte 1)" {
		t.Fatalf("batch: %v", err)
	}
}

// TestAvroHostileDatums: what a datum claims costs no more than its
// length: items that take no bytes are not walked, and nesting is bounded.
func TestAvroHostileDatums(t *testing.T) {
	c := mustAvroChecker(t, `{"type":"record","name":"R","fields":[
		{"name":"nulls","type":{"type":"array","items":"null"}},
		{"name":"empties","type":{"type":"array","items":{"type":"record","name":"E","fields":[{"name":"z","type":{"type":"fixed","name":"Z","size":0}}]}}}]}`)
	huge := []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01} // 2^63-1 items
	datum := append(append(append(bytes.Clone(huge), 0), huge...), 0)
	start := time.Now()
	if err := c.check(datum); err != nil {
		t.Fatalf("array of nulls refused: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("an array of 2^63-1 nulls took %v", d)
	}
	// A block of items of no bytes with a size that is not 0.
	if err := c.check([]byte{1, 2, 0, 0}); err == nil || !strings.Contains(err.Error(), "block size 1, but its items take 0 bytes") {
		t.Fatalf("size of a block of nulls: %v", err)
	}

	list := mustAvroChecker(t, `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`)
	deep := append(bytes.Repeat([]byte{2}, 3*maxAvroDepth), 0)
	if err := list.check(deep); err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Fatalf("deep datum: %v", err)
	}
	if err := list.check(append(bytes.Repeat([]byte{2}, maxAvroDepth/4), 0)); err != nil {
		t.Fatalf("a list of %d: %v", maxAvroDepth/4, err)
	}
}

// TestAvroCheckAllocatesNothing: a good datum is checked without
// allocating.
func TestAvroCheckAllocatesNothing(t *testing.T) {
	c := mustAvroChecker(t, avroTestSchema)
	recs := avroTestDatums(t)
	if n := testing.AllocsPerRun(100, func() {
		if err := c.CheckCall(recs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per call", n)
	}
}

func TestSameAvroSchema(t *testing.T) {
	a := `{"type":"record","name":"R","fields":[{"name":"n","type":"long"}]}`
	for b, want := range map[string]bool{
		a: true,
		"{ \"fields\": [ {\"type\": \"long\", \"name\": \"n\"} ],\n \"name\": \"R\", \"type\": \"record\" }": true,
		`{"type":"record","name":"R","fields":[{"name":"n","type":"int"}]}`:                                  false,
		`{"type":"record","name":"R","fields":[{"name":"n","type":"long"}],"doc":"x"}`:                       false,
		`not json`: false,
	} {
		if got := sameAvroSchema(a, b); got != want {
			t.Errorf("sameAvroSchema(%s) = %v", b, got)
		}
	}
}

func BenchmarkAvroCheck(b *testing.B) {
	c := mustAvroChecker(b, avroTestSchema)
	recs := avroTestDatums(b)
	n := 0
	for _, r := range recs {
		n += len(r)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		if err := c.CheckCall(recs); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzAvroDatum: a datum the checker accepts decodes with hamba/avro.
func FuzzAvroDatum(f *testing.F) {
	for _, d := range avroTestDatums(f) {
		f.Add(d)
	}
	c := mustAvroChecker(f, avroTestSchema)
	s := avro.MustParse(avroTestSchema)
	f.Fuzz(func(t *testing.T, d []byte) {
		if c.check(d) != nil {
			return
		}
		var e avroTestEvent
		if err := avro.Unmarshal(s, d, &e); err != nil {
			t.Fatalf("%x accepted, but hamba/avro: %v", d, err)
		}
	})
}

// FuzzAvroSchema: any schema a client sends is accepted or refused with
// an error, and the datums an accepted one is given are checked without
// failing otherwise.
func FuzzAvroSchema(f *testing.F) {
	f.Add(avroTestSchema, []byte{0})
	f.Add(`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`, []byte{2, 2, 0})
	f.Add(`{"type":"record","name":"R","fields":[{"name":"m","type":{"type":"map","values":{"type":"array","items":"null"}}}]}`, []byte{2, 2, 'k', 4, 0, 0})
	f.Add(`{"type":"record","name":"R","fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}}]}`, []byte{2, 1})
	f.Fuzz(func(t *testing.T, schema string, datum []byte) {
		c, err := newAvroChecker(schema)
		if err != nil {
			return
		}
		_ = c.CheckCall([][]byte{datum, nil})
	})
}
