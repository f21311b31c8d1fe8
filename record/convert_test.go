package record_test

// JSONToProto against values written by hand: every column type of
// testdata/uc_table.json, nested and repeated, maps; and the records it
// refuses, with the field named.

import (
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream/record"
)

// decode converts rec and decodes the result with md.
func decode(t *testing.T, md protoreflect.MessageDescriptor, rec string) protoreflect.Message {
	t.Helper()
	b, err := record.JSONToProto(md, []byte(rec))
	if err != nil {
		t.Fatalf("JSONToProto(%s): %v", rec, err)
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// get returns the value of the field named name (a proto name) of m.
func get(m protoreflect.Message, name string) protoreflect.Value {
	return m.Get(m.Descriptor().Fields().ByName(protoreflect.Name(name)))
}

// everyTypeRecord is a record of testdata/uc_table.json with every column
// set, nested and repeated ones included.
const everyTypeRecord = `{
	"id": "9007199254740993", "s": "héllo", "v": "{\"a\":[1]}", "d": "12.30",
	"ts": 1700000000123456, "tsn": "-1", "i": -2147483648, "sh": 32767, "by": -128,
	"dt": 19723, "db": 1.5e300, "f": "Infinity", "bo": true, "bin": "AP8=",
	"addr": {"zip": 94105, "geo": {"lat": 37.79, "lon": -122.39}},
	"tags": ["a", "", "c"],
	"items": [{"sku": "x", "qty": 2, "days": [1, 2]}, {}],
	"attrs": {"k1": 1, "k2": "-9223372036854775808"},
	"by_day": {"7": {"ok": true}, "-1": {}},
	"unit price": 2.5
}`

func TestJSONToProtoEveryType(t *testing.T) {
	md := ordersType(t)
	m := decode(t, md, everyTypeRecord)
	for name, want := range map[string]any{
		"id": int64(9007199254740993), "s": "héllo", "v": `{"a":[1]}`, "d": "12.30",
		"ts": int64(1700000000123456), "tsn": int64(-1), "i": int32(math.MinInt32), "sh": int32(32767),
		"by": int32(-128), "dt": int32(19723), "db": 1.5e300, "f": float32(math.Inf(1)), "bo": true,
		"unit_price": 2.5,
	} {
		if got := get(m, name).Interface(); got != want {
			t.Errorf("%s = %v (%T), want %v (%T)", name, got, got, want, want)
		}
	}
	if got := get(m, "bin").Bytes(); string(got) != "\x00\xff" {
		t.Errorf("bin = %x", got)
	}
	addr := get(m, "addr").Message()
	geo := get(addr, "geo").Message()
	if get(addr, "zip").Int() != 94105 || get(geo, "lat").Float() != 37.79 || get(geo, "lon").Float() != -122.39 {
		t.Errorf("addr = %v", addr)
	}
	tags := get(m, "tags").List()
	if tags.Len() != 3 || tags.Get(0).String() != "a" || tags.Get(1).String() != "" || tags.Get(2).String() != "c" {
		t.Errorf("tags = %v", tags)
	}
	items := get(m, "items").List()
	if items.Len() != 2 {
		t.Fatalf("items: %d", items.Len())
	}
	it := items.Get(0).Message()
	days := get(it, "days").List()
	if get(it, "sku").String() != "x" || get(it, "qty").Int() != 2 || days.Len() != 2 || days.Get(1).Int() != 2 {
		t.Errorf("items[0] = %v", it)
	}
	attrs := get(m, "attrs").Map()
	if attrs.Len() != 2 || attrs.Get(protoreflect.ValueOfString("k1").MapKey()).Int() != 1 ||
		attrs.Get(protoreflect.ValueOfString("k2").MapKey()).Int() != math.MinInt64 {
		t.Errorf("attrs = %v", attrs)
	}
	byDay := get(m, "by_day").Map()
	if byDay.Len() != 2 || !get(byDay.Get(protoreflect.ValueOfInt32(7).MapKey()).Message(), "ok").Bool() ||
		!byDay.Has(protoreflect.ValueOfInt32(-1).MapKey()) {
		t.Errorf("by_day = %v", byDay)
	}
}

// TestJSONToProtoNumbers: integers exactly, from numbers or strings,
// exponents when integral; floats and their names; base64 either way.
func TestJSONToProtoNumbers(t *testing.T) {
	md := ordersType(t)
	for _, tc := range []struct {
		field, json string
		want        any
	}{
		{"id", `9223372036854775807`, int64(math.MaxInt64)},
		{"id", `"9223372036854775807"`, int64(math.MaxInt64)},
		{"id", `1e3`, int64(1000)},
		{"id", `"1.50e2"`, int64(150)},
		{"id", `-0`, int64(0)},
		{"i", `2.0`, int32(2)},
		{"db", `"NaN"`, math.NaN()},
		{"db", `"-Infinity"`, math.Inf(-1)},
		{"db", `"1.25"`, 1.25},
		{"db", `3`, 3.0},
		{"f", `0.5`, float32(0.5)},
		{"bin", `"_-8"`, "\xff\xef"}, // URL alphabet, unpadded
		{"bin", `"/+8="`, "\xff\xef"},
		{"bin", `""`, ""},
	} {
		rec := `{"id":0,"` + tc.field + `":` + tc.json + `}`
		if tc.field == "id" {
			rec = `{"id":` + tc.json + `}`
		}
		m := decode(t, md, rec)
		got := get(m, tc.field).Interface()
		if b, ok := got.([]byte); ok {
			got = string(b)
		}
		if f, ok := tc.want.(float64); ok && math.IsNaN(f) {
			if g, ok := got.(float64); !ok || !math.IsNaN(g) {
				t.Errorf("%s=%s: got %v", tc.field, tc.json, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s=%s: got %v (%T), want %v", tc.field, tc.json, got, got, tc.want)
		}
	}
}

// TestJSONToProtoNull: null leaves a nullable column out.
func TestJSONToProtoNull(t *testing.T) {
	md := ordersType(t)
	m := decode(t, md, `{"id":1,"s":null,"addr":{"zip":1,"geo":null},"items":[{"sku":null}]}`)
	if m.Has(md.Fields().ByName("s")) || get(m, "addr").Message().Has(md.Fields().ByName("addr").Message().Fields().ByName("geo")) {
		t.Error("null set a field")
	}
}

// TestJSONToProtoRefuses: each refusal is a *ConvertError naming the field
// and the fault.
func TestJSONToProtoRefuses(t *testing.T) {
	md := ordersType(t)
	for _, tc := range []struct {
		json  string
		field string
		fault record.ConvertFault
	}{
		{`[1]`, "", record.FaultSyntax},
		{`{"id":1`, "", record.FaultSyntax},
		{`{"id":1} {}`, "", record.FaultSyntax},
		{"{\"id\":1,\"s\":\"\xff\"}", "", record.FaultSyntax},
		{``, "", record.FaultSyntax},
		{`{"id":1,"nope":2}`, "nope", record.FaultUnknownField},
		{`{"id":1,"addr":{"zip":1,"street":"x"}}`, "addr.street", record.FaultUnknownField},
		{`{"id":1,"id":2}`, "id", record.FaultDuplicateField},
		{`{"id":1,"unit price":1,"unit_price":2}`, "unit_price", record.FaultDuplicateField},
		{`{"id":1,"attrs":{"a":1,"a":2}}`, `attrs["a"]`, record.FaultDuplicateField},
		{`{"id":"x"}`, "id", record.FaultWrongType},
		{`{"id":1.5}`, "id", record.FaultWrongType},
		{`{"id":9223372036854775808}`, "id", record.FaultWrongType},
		{`{"id":1,"i":2147483648}`, "i", record.FaultWrongType},
		{`{"id":1,"s":1}`, "s", record.FaultWrongType},
		{`{"id":1,"d":12.3}`, "d", record.FaultWrongType},
		{`{"id":1,"bo":"true"}`, "bo", record.FaultWrongType},
		{`{"id":1,"bin":"!!"}`, "bin", record.FaultWrongType},
		{`{"id":1,"f":1e39}`, "f", record.FaultWrongType},
		{`{"id":1,"db":"inf"}`, "db", record.FaultWrongType},
		{`{"id":1,"dt":"2024-01-02"}`, "dt", record.FaultWrongType},
		{`{"id":1,"addr":[]}`, "addr", record.FaultWrongType},
		{`{"id":1,"tags":"a"}`, "tags", record.FaultWrongType},
		{`{"id":1,"tags":["a",{}]}`, "tags[1]", record.FaultWrongType},
		{`{"id":1,"items":[{"qty":"many"}]}`, "items[0].qty", record.FaultWrongType},
		{`{"id":1,"by_day":{"x":{}}}`, `by_day["x"]`, record.FaultWrongType},
		{`{"id":null}`, "id", record.FaultNull},
		{`{"id":1,"addr":{"zip":null}}`, "addr.zip", record.FaultNull},
		{`{"id":1,"tags":null}`, "tags", record.FaultNull},
		{`{"id":1,"tags":["a",null]}`, "tags[1]", record.FaultNull},
		{`{"id":1,"attrs":{"a":null}}`, `attrs["a"]`, record.FaultNull},
		{`{}`, "id", record.FaultMissing},
		{`{"id":1,"addr":{}}`, "addr.zip", record.FaultMissing},
	} {
		_, err := record.JSONToProto(md, []byte(tc.json))
		var ce *record.ConvertError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *ConvertError", tc.json, err)
			continue
		}
		if ce.Field != tc.field || ce.Fault != tc.fault {
			t.Errorf("%s: field %q fault %v (%v); want %q %v", tc.json, ce.Field, ce.Fault, err, tc.field, tc.fault)
		}
		if tc.field != "" && !strings.Contains(err.Error(), `"`+strings.ReplaceAll(tc.field, `"`, `\"`)+`"`) {
			t.Errorf("%s: message %q does not name the field", tc.json, err)
		}
	}
}

// TestJSONToProtoDeterministic: the same JSON gives the same bytes every
// time, maps included, so that a record converted again (an ingest rerun
// after a crash) is the same payload a strict server compares with the
// one it stored.
func TestJSONToProtoDeterministic(t *testing.T) {
	md := ordersType(t)
	rec := []byte(`{"id": 1, "attrs": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8},
		"by_day": {"1": {}, "2": {"ok": true}, "3": {}, "4": {"ok": false}, "5": {}}}`)
	first, err := record.JSONToProto(md, rec)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if b, err := record.JSONToProto(md, rec); err != nil || string(b) != string(first) {
			t.Fatalf("JSONToProto gave %x, then %x (%v)", first, b, err)
		}
	}
}
