package record_test

// TableChecker: built from testdata/uc_table.json (every column type),
// its parsed columns (Fields), the schemas it refuses, and JSON records
// accepted and refused with the field named.

import (
	"errors"
	"reflect"
	"testing"

	"github.com/zbstream/zbstream/record"
)

// ordersChecker returns the TableChecker of testdata/uc_table.json.
func ordersChecker(t testing.TB) *record.TableChecker {
	t.Helper()
	c, err := record.NewTableChecker(ordersSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTableCheckerFields: every column of the table with its canonical
// kind (LONG is BIGINT, SHORT SMALLINT, BYTE TINYINT), nested types and
// nullability, in the order of the columns' positions.
func TestTableCheckerFields(t *testing.T) {
	c := ordersChecker(t)
	scalar := func(name, kind string, nullable bool) record.TableField {
		return record.TableField{Name: name, Type: &record.FieldType{Kind: kind}, Nullable: nullable}
	}
	want := []record.TableField{
		scalar("id", "BIGINT", false), scalar("s", "STRING", true), scalar("v", "VARIANT", true),
		scalar("d", "DECIMAL", true), scalar("ts", "TIMESTAMP", true), scalar("tsn", "TIMESTAMP_NTZ", true),
		scalar("i", "INT", true), scalar("sh", "SMALLINT", true), scalar("by", "TINYINT", true),
		scalar("dt", "DATE", true), scalar("db", "DOUBLE", true), scalar("f", "FLOAT", true),
		scalar("bo", "BOOLEAN", true), scalar("bin", "BINARY", true),
		{Name: "addr", Nullable: true, Type: &record.FieldType{Kind: "STRUCT", Fields: []record.TableField{
			scalar("zip", "INT", false),
			{Name: "geo", Nullable: true, Type: &record.FieldType{Kind: "STRUCT", Fields: []record.TableField{
				scalar("lat", "DOUBLE", true), scalar("lon", "DOUBLE", true),
			}}},
		}}},
		{Name: "tags", Nullable: true, Type: &record.FieldType{Kind: "ARRAY", Elem: &record.FieldType{Kind: "STRING"}}},
		{Name: "items", Nullable: true, Type: &record.FieldType{Kind: "ARRAY", Elem: &record.FieldType{Kind: "STRUCT", Fields: []record.TableField{
			scalar("sku", "STRING", true), scalar("qty", "BIGINT", true),
			{Name: "days", Nullable: true, Type: &record.FieldType{Kind: "ARRAY", Elem: &record.FieldType{Kind: "DATE"}}},
		}}}},
		{Name: "attrs", Nullable: true, Type: &record.FieldType{Kind: "MAP", Key: &record.FieldType{Kind: "STRING"}, Value: &record.FieldType{Kind: "BIGINT"}}},
		{Name: "by_day", Nullable: true, Type: &record.FieldType{Kind: "MAP", Key: &record.FieldType{Kind: "INT"}, Value: &record.FieldType{Kind: "STRUCT", Fields: []record.TableField{
			scalar("ok", "BOOLEAN", true),
		}}}},
		scalar("unit price", "DOUBLE", true),
	}
	got := c.Fields()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Fields() =\n%+v\nwant\n%+v", got, want)
	}
	// The tree is the caller's: changing it changes neither the checker
	// nor the next call's.
	got[0].Name = "changed"
	got[14].Type.Fields[0].Type.Kind = "STRING"
	if again := c.Fields(); !reflect.DeepEqual(again, want) {
		t.Errorf("Fields() after a caller changed its copy = %+v", again)
	}
}

func TestTableCheckerSchemaIsACopy(t *testing.T) {
	cols := []record.Column{{Name: "id", TypeName: "BIGINT"}, {Name: "s", TypeName: "STRING", Position: 1, Nullable: true}}
	ts := &record.TableSchema{Name: "t", Columns: cols}
	c, err := record.NewTableChecker(ts)
	if err != nil {
		t.Fatal(err)
	}
	cols[0].Name = "changed" // the caller's slice, after the fact
	s := c.Schema()
	if s.Name != "t" || len(s.Columns) != 2 || s.Columns[0].Name != "id" || s.Columns[1].Name != "s" {
		t.Fatalf("Schema() = %+v", s)
	}
	s.Columns[1].TypeName = "INT"
	if c.Schema().Columns[1].TypeName != "STRING" {
		t.Error("a change to Schema()'s answer reached the checker")
	}
	if err := c.CheckJSON([]byte(`{"id":1,"s":"x"}`)); err != nil {
		t.Errorf("CheckJSON: %v", err)
	}
}

func TestNewTableCheckerRefuses(t *testing.T) {
	for _, tc := range []struct {
		what   string
		table  *record.TableSchema
		column string // the column the *SchemaError names
	}{
		{"no schema", nil, ""},
		{"no columns", &record.TableSchema{Name: "t"}, ""},
		{"a type without a mapping", &record.TableSchema{Name: "t", Columns: []record.Column{
			{Name: "id", TypeName: "BIGINT"}, {Name: "span", TypeName: "INTERVAL", Position: 1}}}, "span"},
		{"an ARRAY of ARRAYs", &record.TableSchema{Name: "t", Columns: []record.Column{
			{Name: "m", TypeName: "ARRAY", TypeJSON: `{"type":"array","elementType":{"type":"array","elementType":"integer"}}`}}}, "m"},
		{"colliding proto names", &record.TableSchema{Name: "t", Columns: []record.Column{
			{Name: "a b", TypeName: "INT"}, {Name: "a_b", TypeName: "INT", Position: 1}}}, "a_b"},
		{"a STRUCT without its type_json", &record.TableSchema{Name: "t", Columns: []record.Column{
			{Name: "st", TypeName: "STRUCT"}}}, "st"},
	} {
		c, err := record.NewTableChecker(tc.table)
		var se *record.SchemaError
		if c != nil || !errors.As(err, &se) || se.Column != tc.column {
			t.Errorf("%s: %v, %v; want a *SchemaError naming %q", tc.what, c, err, tc.column)
		}
	}
}

// TestTableCheckerJSON: records of testdata/uc_table.json, every column
// type among them, accepted; and refused with the field and the fault.
func TestTableCheckerJSON(t *testing.T) {
	c := ordersChecker(t)
	for _, rec := range []string{
		`{"id": 1}`, // only the NOT NULL column
		everyTypeRecord,
		`{"id": 1, "s": null, "addr": null, "f": null, "bin": null}`, // null leaves a nullable column out
		`{"id": 1, "unit_price": 2.5}`,                               // the column's proto name
		`{"id": 1, "tags": [], "attrs": {}, "items": []}`,
	} {
		if err := c.CheckJSON([]byte(rec)); err != nil {
			t.Errorf("CheckJSON(%s): %v", rec, err)
		}
	}
	for _, tc := range []struct {
		rec   string
		field string
		fault record.ConvertFault
	}{
		{`[1]`, "", record.FaultSyntax},
		{`{"id": 1`, "", record.FaultSyntax},
		{`{"id": 1, "nope": 2}`, "nope", record.FaultUnknownField},
		{`{"id": 1, "addr": {"zip": 1, "city": "x"}}`, "addr.city", record.FaultUnknownField},
		{`{"id": 1, "id": 2}`, "id", record.FaultDuplicateField},
		{`{"id": "x"}`, "id", record.FaultWrongType},
		{`{"id": 1, "s": 1}`, "s", record.FaultWrongType},
		{`{"id": 1, "d": 12.3}`, "d", record.FaultWrongType},
		{`{"id": 1, "i": 2147483648}`, "i", record.FaultWrongType},
		{`{"id": 1, "dt": "2024-01-02"}`, "dt", record.FaultWrongType},
		{`{"id": 1, "bo": "true"}`, "bo", record.FaultWrongType},
		{`{"id": 1, "bin": "!!"}`, "bin", record.FaultWrongType},
		{`{"id": 1, "addr": 1}`, "addr", record.FaultWrongType},
		{`{"id": 1, "tags": "a"}`, "tags", record.FaultWrongType},
		{`{"id": 1, "attrs": [1]}`, "attrs", record.FaultWrongType},
		{`{"id": 1, "items": [{}, {"qty": "two"}]}`, "items[1].qty", record.FaultWrongType},
		{`{"id": 1, "items": [{"days": [1, "x"]}]}`, "items[0].days[1]", record.FaultWrongType},
		{`{"id": 1, "attrs": {"k": true}}`, `attrs["k"]`, record.FaultWrongType},
		{`{"id": 1, "by_day": {"x": {}}}`, `by_day["x"]`, record.FaultWrongType},
		{`{"id": 1, "by_day": {"1": {"ok": 1}}}`, `by_day["1"].ok`, record.FaultWrongType},
		{`{"id": null}`, "id", record.FaultNull},
		{`{"id": 1, "tags": null}`, "tags", record.FaultNull},
		{`{"id": 1, "tags": ["a", null]}`, "tags[1]", record.FaultNull},
		{`{"id": 1, "addr": {"zip": null}}`, "addr.zip", record.FaultNull},
		{`{}`, "id", record.FaultMissing},
		{`{"id": 1, "addr": {"geo": {}}}`, "addr.zip", record.FaultMissing},
	} {
		err := c.CheckJSON([]byte(tc.rec))
		var ce *record.ConvertError
		if !errors.As(err, &ce) || ce.Field != tc.field || ce.Fault != tc.fault {
			t.Errorf("CheckJSON(%s) = %v; want a *ConvertError at %q, %v", tc.rec, err, tc.field, tc.fault)
		}
	}
}

func TestFitErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  *record.FitError
		want string
	}{
		{&record.FitError{Field: "a.b", Reason: "why"}, `does not fit the table: field "a.b": why`},
		{&record.FitError{Reason: "why"}, `does not fit the table: why`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// BenchmarkTableCheckerJSON: CheckJSON converts the record, as JSONToProto
// does, where the syntax check alone (record.CheckJSON) only scans it.
func BenchmarkTableCheckerJSON(b *testing.B) {
	c := ordersChecker(b)
	rec := []byte(everyTypeRecord)
	b.Run("CheckJSON", func(b *testing.B) {
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if err := c.CheckJSON(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("syntax", func(b *testing.B) {
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if err := record.CheckJSON(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}
