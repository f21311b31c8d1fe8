package record_test

// Unity Catalog schemas to descriptors: the table in testdata, every type
// mapped, names made valid, nullability, and the schemas refused.

import (
	"errors"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream/record"
)

// ordersSchema returns the table of testdata/uc_table.json.
func ordersSchema(t testing.TB) *record.TableSchema {
	t.Helper()
	raw, err := os.ReadFile("testdata/uc_table.json")
	if err != nil {
		t.Fatal(err)
	}
	ts, err := record.ParseTableSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// ordersType returns the message type of testdata/uc_table.json, built as
// a stream's descriptor is: serialized, then read back with
// record.MessageDescriptor.
func ordersType(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	dp, err := ordersSchema(t).Descriptor()
	if err != nil {
		t.Fatal(err)
	}
	return messageOf(t, dp)
}

func TestParseTableSchema(t *testing.T) {
	ts := ordersSchema(t)
	if ts.Name != "orders" || ts.FullName != "main.sales.orders" || len(ts.Columns) != 20 {
		t.Fatalf("got %+v", ts)
	}
	if c := ts.Columns[0]; c.Name != "id" || c.TypeName != "LONG" || c.Nullable || c.Position != 0 {
		t.Errorf("column 0: %+v", c)
	}
	if c := ts.Columns[2]; !c.Nullable { // no "nullable" in the answer: nullable
		t.Errorf("column v without nullable: %+v", c)
	}
	for _, bad := range []string{`[]`, `{"name":"t","columns":[]}`, `{"name":`} {
		var se *record.SchemaError
		if _, err := record.ParseTableSchema([]byte(bad)); !errors.As(err, &se) || se.Fault != record.SchemaFaultTable {
			t.Errorf("%s: %v, want a *SchemaError of fault table", bad, err)
		}
	}
}

// TestDescriptorTypeMapping: every column of the table gets the field the
// official SDKs give it.
func TestDescriptorTypeMapping(t *testing.T) {
	md := ordersType(t)
	if md.Name() != "orders" || md.Syntax() != protoreflect.Proto2 {
		t.Fatalf("message %s (%v)", md.FullName(), md.Syntax())
	}
	type want struct {
		name        protoreflect.Name
		kind        protoreflect.Kind
		card        protoreflect.Cardinality
		isMap       bool
		messageName protoreflect.Name
	}
	opt, req, rep := protoreflect.Optional, protoreflect.Required, protoreflect.Repeated
	wants := map[string]want{
		"id": {"id", protoreflect.Int64Kind, req, false, ""}, "s": {"s", protoreflect.StringKind, opt, false, ""},
		"v": {"v", protoreflect.StringKind, opt, false, ""}, "d": {"d", protoreflect.StringKind, opt, false, ""},
		"ts": {"ts", protoreflect.Int64Kind, opt, false, ""}, "tsn": {"tsn", protoreflect.Int64Kind, opt, false, ""},
		"i": {"i", protoreflect.Int32Kind, opt, false, ""}, "sh": {"sh", protoreflect.Int32Kind, opt, false, ""},
		"by": {"by", protoreflect.Int32Kind, opt, false, ""}, "dt": {"dt", protoreflect.Int32Kind, opt, false, ""},
		"db": {"db", protoreflect.DoubleKind, opt, false, ""}, "f": {"f", protoreflect.FloatKind, opt, false, ""},
		"bo": {"bo", protoreflect.BoolKind, opt, false, ""}, "bin": {"bin", protoreflect.BytesKind, opt, false, ""},
		"addr":       {"addr", protoreflect.MessageKind, opt, false, "Addr"},
		"tags":       {"tags", protoreflect.StringKind, rep, false, ""},
		"items":      {"items", protoreflect.MessageKind, rep, false, "Items"},
		"attrs":      {"attrs", protoreflect.MessageKind, rep, true, "AttrsEntry"},
		"by_day":     {"by_day", protoreflect.MessageKind, rep, true, "ByDayEntry"},
		"unit price": {"unit_price", protoreflect.DoubleKind, opt, false, ""},
	}
	fields := md.Fields()
	if fields.Len() != len(wants) {
		t.Fatalf("%d fields, want %d", fields.Len(), len(wants))
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		w, ok := wants[fd.JSONName()]
		if !ok {
			t.Errorf("field %s: json_name %q is no column", fd.Name(), fd.JSONName())
			continue
		}
		if fd.Number() != protoreflect.FieldNumber(i+1) {
			t.Errorf("%s: number %d, want %d (position + 1)", fd.Name(), fd.Number(), i+1)
		}
		if fd.Name() != w.name || fd.Kind() != w.kind || fd.Cardinality() != w.card || fd.IsMap() != w.isMap {
			t.Errorf("%s: %s %v %v map=%v, want %+v", fd.JSONName(), fd.Name(), fd.Kind(), fd.Cardinality(), fd.IsMap(), w)
		}
		if w.messageName != "" && fd.Message().Name() != w.messageName {
			t.Errorf("%s: message %s, want %s", fd.Name(), fd.Message().Name(), w.messageName)
		}
	}
	addr := fields.ByName("addr").Message()
	if zip := addr.Fields().ByName("zip"); zip.Cardinality() != req || zip.Kind() != protoreflect.Int32Kind {
		t.Errorf("addr.zip: %v %v", zip.Cardinality(), zip.Kind())
	}
	if geo := addr.Fields().ByName("geo"); geo.Message().FullName() != "orders.Addr.Geo" {
		t.Errorf("addr.geo: %s", geo.Message().FullName())
	}
	days := fields.ByName("items").Message().Fields().ByName("days")
	if days.Cardinality() != rep || days.Kind() != protoreflect.Int32Kind {
		t.Errorf("items.days: %v %v", days.Cardinality(), days.Kind())
	}
	byDay := fields.ByName("by_day")
	if byDay.MapKey().Kind() != protoreflect.Int32Kind || byDay.MapValue().Message().Name() != "ByDayValue" {
		t.Errorf("by_day: key %v value %v", byDay.MapKey().Kind(), byDay.MapValue().Message().FullName())
	}
}

// TestDescriptorFromColumnsRefuses: schemas without a proto descriptor are
// *SchemaErrors naming the column.
func TestDescriptorFromColumnsRefuses(t *testing.T) {
	arr := func(elem string) string { return `{"type":"array","elementType":` + elem + `}` }
	for _, tc := range []struct {
		name    string
		columns []record.Column
		column  string
		fault   record.SchemaFault
		reason  string
	}{
		{"no columns", nil, "", record.SchemaFaultTable, "no columns"},
		{"unknown type", []record.Column{{Name: "x", TypeName: "INTERVAL"}}, "x", record.SchemaFaultType, "no proto mapping"},
		{"collision", []record.Column{{Name: "a b", TypeName: "INT"}, {Name: "a_b", TypeName: "INT", Position: 1}}, "a_b", record.SchemaFaultName, `"a_b" is also that of column "a b"`},
		{"type and message collide", []record.Column{{Name: "Ab", TypeName: "INT"}, {Name: "ab", TypeName: "STRUCT", TypeJSON: `{"type":"struct","fields":[]}`, Position: 1}}, "ab", record.SchemaFaultName, `"Ab"`},
		{"empty name", []record.Column{{Name: "", TypeName: "INT"}}, "", record.SchemaFaultName, "needs a name"},
		{"complex without type_json", []record.Column{{Name: "a", TypeName: "ARRAY"}}, "a", record.SchemaFaultTypeJSON, "needs its type_json"},
		{"bad type_json", []record.Column{{Name: "a", TypeName: "ARRAY", TypeJSON: `{"type":`}}, "a", record.SchemaFaultTypeJSON, "does not parse"},
		{"type_json of another type", []record.Column{{Name: "a", TypeName: "MAP", TypeJSON: arr(`"string"`)}}, "a", record.SchemaFaultTypeJSON, "type_name is MAP"},
		{"array of arrays", []record.Column{{Name: "a", TypeName: "ARRAY", TypeJSON: arr(arr(`"string"`))}}, "a", record.SchemaFaultNesting, "ARRAY of ARRAYs"},
		{"double key", []record.Column{{Name: "m", TypeName: "MAP", TypeJSON: `{"type":"map","keyType":"double","valueType":"string"}`}}, "m", record.SchemaFaultNesting, "key"},
		{"map of maps", []record.Column{{Name: "m", TypeName: "MAP", TypeJSON: `{"type":"map","keyType":"string","valueType":{"type":"map","keyType":"string","valueType":"string"}}`}}, "m", record.SchemaFaultNesting, "MAP of"},
		{"map named with a digit", []record.Column{{Name: "1m", TypeName: "MAP", TypeJSON: `{"type":"map","keyType":"string","valueType":"string"}`}}, "1m", record.SchemaFaultName, "entry message"},
		{"nested unknown", []record.Column{{Name: "s", TypeName: "STRUCT", TypeJSON: `{"type":"struct","fields":[{"name":"in","type":"interval"}]}`}}, "s.in", record.SchemaFaultType, "no proto mapping"},
		{"too deep", []record.Column{{Name: "a", TypeName: "ARRAY", TypeJSON: strings.Repeat(`{"type":"array","elementType":`, 100) + `"int"` + strings.Repeat("}", 100)}}, "a" + strings.Repeat("[]", 65), record.SchemaFaultTypeJSON, "deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := record.DescriptorFromColumns("T", tc.columns)
			var se *record.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SchemaError", err)
			}
			if se.Column != tc.column || se.Fault != tc.fault || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got column %q, fault %v, %v; want column %q, fault %v and %q", se.Column, se.Fault, err, tc.column, tc.fault, tc.reason)
			}
		})
	}
	var se *record.SchemaError
	if _, err := record.DescriptorFromColumns("1x", []record.Column{{Name: "a", TypeName: "INT"}}); !errors.As(err, &se) || se.Fault != record.SchemaFaultTable {
		t.Errorf("message name 1x: %v, want a *SchemaError of fault table", err)
	}
}

// TestDescriptorNames: sanitising is deterministic and the json_name keeps
// the column's name; columns are numbered in position order.
func TestDescriptorNames(t *testing.T) {
	dp, err := record.DescriptorFromColumns(record.DefaultMessageName, []record.Column{
		{Name: "größe", TypeName: "INT", Position: 2, Nullable: true},
		{Name: "2nd", TypeName: "STRING", Position: 1, Nullable: true},
		{Name: "a.b-c", TypeName: "STRING", Position: 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, f := range dp.GetField() {
		got = append(got, f.GetName()+"/"+f.GetJsonName()+"/"+f.GetLabel().String())
	}
	want := "a_b_c/a.b-c/LABEL_REQUIRED _2nd/2nd/LABEL_OPTIONAL gr__e/größe/LABEL_OPTIONAL"
	if strings.Join(got, " ") != want {
		t.Errorf("got %s\nwant %s", strings.Join(got, " "), want)
	}
	if dp.GetField()[2].GetNumber() != 3 || dp.GetField()[2].GetType() != descriptorpb.FieldDescriptorProto_TYPE_INT32 {
		t.Errorf("größe: %v", dp.GetField()[2])
	}
	if n := record.MessageName("my-table"); n != "my_table" {
		t.Errorf("MessageName(my-table) = %q", n)
	}
	if n := record.MessageName("1t"); n != "T1t" {
		t.Errorf("MessageName(1t) = %q", n)
	}
}
