package ingest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
)

// testAvroSchema has every kind of type -avro-schema converts JSON to.
const testAvroSchema = `{"type":"record","name":"Order","namespace":"acme","fields":[
 {"name":"id","type":"long"},
 {"name":"qty","type":"int"},
 {"name":"price","type":"double"},
 {"name":"ratio","type":"float","default":0.5},
 {"name":"paid","type":"boolean"},
 {"name":"note","type":["null","string"]},
 {"name":"raw","type":"bytes","default":""},
 {"name":"tags","type":{"type":"array","items":"string"},"default":[]},
 {"name":"attrs","type":{"type":"map","values":"long"},"default":{}},
 {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","SHIPPED"]}},
 {"name":"code","type":["null",{"type":"fixed","name":"Code","size":2}],"default":null},
 {"name":"ship","type":["null",{"type":"record","name":"Ship","fields":[{"name":"city","type":"string"}]}],"default":null}]}`

func testAvroCodec(t *testing.T, schema string) *avroCodec {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.avsc")
	if err := os.WriteFile(path, []byte(schema), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := loadAvroSchema(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAvroEncode: a JSON line becomes the datum of its values, with
// defaults for missing fields and null for a missing nullable field; the
// datum decodes back to them under the schema.
func TestAvroEncode(t *testing.T) {
	c := testAvroCodec(t, testAvroSchema)
	for _, tc := range []struct {
		line string
		want map[string]any
	}{
		{`{"id":1,"qty":2,"price":3.5,"paid":true,"note":"hi","state":"NEW","tags":["a","b"],"attrs":{"k":7},"code":"ab","ship":{"city":"Oslo"}}`,
			map[string]any{"id": int64(1), "qty": 2, "price": 3.5, "ratio": float32(0.5), "paid": true, "note": "hi", "raw": []byte{},
				"tags": []any{"a", "b"}, "attrs": map[string]any{"k": int64(7)}, "state": "NEW",
				// Named branches of a union decode wrapped in their name.
				"code": map[string]any{"acme.Code": [2]byte{'a', 'b'}}, "ship": map[string]any{"acme.Ship": map[string]any{"city": "Oslo"}}}},
		// Nulls, the Avro-JSON union wrapper, a number with an exponent.
		{`{"id":9007199254740993,"qty":-1,"price":1e3,"ratio":2,"paid":false,"note":{"string":"w"},"raw":"\u0001","state":"SHIPPED","ship":null}`,
			map[string]any{"id": int64(9007199254740993), "qty": -1, "price": 1000.0, "ratio": float32(2), "paid": false, "note": "w",
				"raw": []byte{1}, "tags": []any{}, "attrs": map[string]any{}, "state": "SHIPPED", "code": nil, "ship": nil}},
	} {
		datum, reason := c.encode([]byte(tc.line))
		if reason != "" {
			t.Fatalf("%s: %s", tc.line, reason)
		}
		var got map[string]any
		if err := avro.Unmarshal(c.schema, datum, &got); err != nil {
			t.Fatalf("%s: the datum does not decode: %v", tc.line, err)
		}
		for k, w := range tc.want {
			if g := got[k]; !reflect.DeepEqual(g, w) && !(isNumber(g) && isNumber(w) && reflect.ValueOf(g).Convert(reflect.TypeOf(0.0)).Float() == reflect.ValueOf(w).Convert(reflect.TypeOf(0.0)).Float()) {
				t.Errorf("%s: field %s = %#v, want %#v", tc.line, k, g, w)
			}
		}
	}
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int32, int64, float32, float64:
		return true
	}
	return false
}

// TestAvroEncodeRefuses: a line that does not fit the schema is refused
// with the field and what it wanted.
func TestAvroEncodeRefuses(t *testing.T) {
	c := testAvroCodec(t, testAvroSchema)
	base := `"qty":1,"price":1,"paid":true,"note":null,"state":"NEW"`
	for _, tc := range []struct{ line, want string }{
		{`{` + base + `}`, "field id: missing, and the schema gives it no default"},
		{`{"id":"7",` + base + `}`, `field id: want an integer, got "7"`},
		{`{"id":1.5,` + base + `}`, "field id: want an integer, got 1.5"},
		{`{"id":1,` + base + `,"extra":1}`, "field extra: not a field of record acme.Order"},
		{`{"id":1,"qty":3000000000,"price":1,"paid":true,"note":null,"state":"NEW"}`, "field qty: want an int (32 bits), got 3000000000"},
		{`{"id":1,"qty":1,"price":1,"paid":true,"note":null,"state":"OLD"}`, `field state: want one of [NEW SHIPPED], got "OLD"`},
		{`{"id":1,` + base + `,"note":5}`, "field note: fits no branch of the union [null, string]"},
		{`{"id":1,` + base + `,"code":"abc"}`, "field code: fits no branch"},
		{`{"id":1,` + base + `,"ship":{"town":"x"}}`, "field ship.city: missing"},
		{`{"id":1,` + base + `,"tags":"a"}`, "field tags: want an array, got a string"},
		{`{"id":1,` + base + `,"attrs":{"k":"v"}}`, `field attrs.k: want an integer, got "v"`},
	} {
		_, reason := c.encode([]byte(tc.line))
		if !strings.Contains(reason, tc.want) || !strings.HasPrefix(reason, "does not fit the Avro schema: ") {
			t.Errorf("%s: %q, want it to say %q", tc.line, reason, tc.want)
		}
	}
}

// TestLoadAvroSchemaRefuses: a file that is not an Avro record schema is
// an input error naming the file.
func TestLoadAvroSchemaRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ body, want string }{
		"notjson.avsc": {`{"type":`, "not an Avro schema"},
		"string.avsc":  {`"string"`, "a string schema; a table's records need a record schema"},
		"badtype.avsc": {`{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}`, "not an Avro schema"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadAvroSchema(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want it to name the file and say %q", name, err, tc.want)
		}
	}
	if _, err := loadAvroSchema(filepath.Join(dir, "missing.avsc")); err == nil || !strings.Contains(err.Error(), "-avro-schema") {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzAvroEncode: any line gives a datum that decodes under the schema, or
// a reason; never a panic.
func FuzzAvroEncode(f *testing.F) {
	for _, s := range []string{`{"id":1,"qty":2,"price":3.5,"paid":true,"note":"hi","state":"NEW"}`, `{"id":1e400}`, `{"ship":{"city":null}}`, `{`, `[]`} {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "s.avsc")
	if err := os.WriteFile(path, []byte(testAvroSchema), 0o600); err != nil {
		f.Fatal(err)
	}
	c, err := loadAvroSchema(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		datum, reason := c.encode(line)
		if reason != "" {
			return
		}
		var v any
		if err := avro.Unmarshal(c.schema, datum, &v); err != nil {
			t.Fatalf("%q encoded to a datum that does not decode: %v", line, err)
		}
	})
}
