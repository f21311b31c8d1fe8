package zerobus_test

// The Unity Catalog schema helpers against descriptors written by hand from
// the official SDK's rules: every column type, nesting, field numbers
// (position + 1), message names, the errors and their kinds, the columns'
// JSON, and a program of the official dynamic example's shape.

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	zerobus "github.com/zbstream/zbstream/zerobus"
)

// fieldLines lists the fields of dp and of its nested messages, depth
// first, as "Message.field #number LABEL TYPE [type]"; a map entry's
// message is marked "(map)". It fails t if a field's json_name is not its
// name, as the official SDK makes it.
func fieldLines(t *testing.T, dp *descriptorpb.DescriptorProto, prefix string) []string {
	t.Helper()
	name := prefix + dp.GetName()
	if dp.GetOptions().GetMapEntry() {
		name += "(map)"
	}
	var lines []string
	for _, f := range dp.GetField() {
		l := fmt.Sprintf("%s.%s #%d %s %s", name, f.GetName(), f.GetNumber(),
			strings.TrimPrefix(f.GetLabel().String(), "LABEL_"), strings.TrimPrefix(f.GetType().String(), "TYPE_"))
		if f.GetTypeName() != "" {
			l += " " + f.GetTypeName()
		}
		lines = append(lines, l)
		if f.GetJsonName() != f.GetName() {
			t.Errorf("%s: json_name %q", l, f.GetJsonName())
		}
	}
	for _, n := range dp.GetNestedType() {
		lines = append(lines, fieldLines(t, n, name+".")...)
	}
	return lines
}

func sameLines(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestUcScalarTypes: every type name the official SDK maps, aliases
// included, numbered by position + 1 (gaps kept), in position order
// whatever the columns' order, NOT NULL as required.
func TestUcScalarTypes(t *testing.T) {
	cols := []zerobus.UcColumn{
		{Name: "late", TypeName: "STRING", Nullable: true, Position: 40},
		{Name: "bin", TypeName: "BINARY", Nullable: true, Position: 18},
		{Name: "b2", TypeName: "BOOL", Nullable: true, Position: 17},
		{Name: "bo", TypeName: "BOOLEAN", Nullable: true, Position: 16},
		{Name: "f", TypeName: "FLOAT", Nullable: true, Position: 15},
		{Name: "db", TypeName: "DOUBLE", Nullable: true, Position: 14},
		{Name: "dt", TypeName: "DATE", Nullable: true, Position: 13},
		{Name: "ti", TypeName: "TINYINT", Nullable: true, Position: 12},
		{Name: "by", TypeName: "BYTE", Nullable: true, Position: 11},
		{Name: "sm", TypeName: "SMALLINT", Nullable: true, Position: 10},
		{Name: "sh", TypeName: "SHORT", Nullable: true, Position: 9},
		{Name: "ig", TypeName: "INTEGER", Nullable: true, Position: 8},
		{Name: "i", TypeName: "INT", Nullable: true, Position: 7},
		{Name: "tn", TypeName: "TIMESTAMP_NTZ", Nullable: true, Position: 6},
		{Name: "ts", TypeName: "TIMESTAMP", Nullable: true, Position: 5},
		{Name: "bi", TypeName: "BIGINT", Nullable: true, Position: 4},
		{Name: "l", TypeName: "LONG", Nullable: false, Position: 3},
		{Name: "d", TypeName: "DECIMAL", TypeText: "decimal(10,2)", Nullable: true, Position: 2},
		{Name: "v", TypeName: "VARIANT", Nullable: true, Position: 1},
		{Name: "s", TypeName: "STRING", Nullable: false, Position: 0},
		{Name: "hidden", TypeName: "STRING", Nullable: true, Position: -1},
	}
	dp, err := zerobus.DescriptorFromUcColumns(cols, "AllTypes")
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, fieldLines(t, dp, ""), []string{
		"AllTypes.s #1 REQUIRED STRING",
		"AllTypes.v #2 OPTIONAL STRING",
		"AllTypes.d #3 OPTIONAL STRING",
		"AllTypes.l #4 REQUIRED INT64",
		"AllTypes.bi #5 OPTIONAL INT64",
		"AllTypes.ts #6 OPTIONAL INT64",
		"AllTypes.tn #7 OPTIONAL INT64",
		"AllTypes.i #8 OPTIONAL INT32",
		"AllTypes.ig #9 OPTIONAL INT32",
		"AllTypes.sh #10 OPTIONAL INT32",
		"AllTypes.sm #11 OPTIONAL INT32",
		"AllTypes.by #12 OPTIONAL INT32",
		"AllTypes.ti #13 OPTIONAL INT32",
		"AllTypes.dt #14 OPTIONAL INT32",
		"AllTypes.db #15 OPTIONAL DOUBLE",
		"AllTypes.f #16 OPTIONAL FLOAT",
		"AllTypes.bo #17 OPTIONAL BOOL",
		"AllTypes.b2 #18 OPTIONAL BOOL",
		"AllTypes.bin #19 OPTIONAL BYTES",
		"AllTypes.late #41 OPTIONAL STRING",
	})
	if len(dp.GetNestedType()) != 0 || dp.GetOptions() != nil {
		t.Errorf("nested %v, options %v", dp.GetNestedType(), dp.GetOptions())
	}
}

// ucNested is a table of every nesting the official SDK maps: a struct
// (its type_json in the tables API's wrapped form) holding a struct, an
// array of structs and a map; arrays of scalars and of structs; maps of
// scalars and of structs; decimals in a type_json.
var ucNested = []zerobus.UcColumn{
	{Name: "addr", TypeName: "STRUCT", Nullable: true, Position: 0, TypeJson: `{"name":"addr","type":{"type":"struct","fields":[` +
		`{"name":"zip","type":"integer","nullable":false,"metadata":{}},` +
		`{"name":"geo","type":{"type":"struct","fields":[{"name":"lat","type":"double","nullable":true}]},"nullable":true},` +
		`{"name":"lines","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"sku","type":"string"}]},"containsNull":true}},` +
		`{"name":"props","type":{"type":"map","keyType":"string","valueType":"string","valueContainsNull":true}}` +
		`]},"nullable":true,"metadata":{}}`},
	{Name: "tags", TypeName: "ARRAY", Nullable: false, Position: 1, TypeJson: `{"type":"array","elementType":"string","containsNull":true}`},
	{Name: "items", TypeName: "ARRAY", Nullable: true, Position: 2, TypeJson: `{"type":"array","elementType":{"type":"struct","fields":[` +
		`{"name":"sku","type":"string","nullable":false},{"name":"qty","type":"long","nullable":true}]},"containsNull":false}`},
	{Name: "attrs", TypeName: "MAP", Nullable: true, Position: 3, TypeJson: `{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true}`},
	{Name: "by_day", TypeName: "MAP", Nullable: true, Position: 4, TypeJson: `{"type":"map","keyType":"integer","valueType":{"type":"struct","fields":[{"name":"ok","type":"boolean"}]}}`},
	{Name: "amounts", TypeName: "ARRAY", Nullable: true, Position: 5, TypeJson: `{"type":"array","elementType":"decimal(10,2)","containsNull":true}`},
}

// TestUcNestedTypes: nested messages named after their path (the map
// entry of a struct's field as protobuf requires: PropsEntry where the
// official SDK writes AddrPropsEntry, which protobuf refuses), declared in
// the message holding the field, in field order, a struct's fields
// numbered from 1; the descriptor is one protobuf accepts, maps included.
func TestUcNestedTypes(t *testing.T) {
	dp, err := zerobus.DescriptorFromUcColumns(ucNested, "Orders")
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, fieldLines(t, dp, ""), []string{
		"Orders.addr #1 OPTIONAL MESSAGE Addr",
		"Orders.tags #2 REPEATED STRING",
		"Orders.items #3 REPEATED MESSAGE ItemsElement",
		"Orders.attrs #4 REPEATED MESSAGE AttrsEntry",
		"Orders.by_day #5 REPEATED MESSAGE ByDayEntry",
		"Orders.amounts #6 REPEATED STRING",
		"Orders.Addr.zip #1 REQUIRED INT32",
		"Orders.Addr.geo #2 OPTIONAL MESSAGE AddrGeo",
		"Orders.Addr.lines #3 REPEATED MESSAGE AddrLinesElement",
		"Orders.Addr.props #4 REPEATED MESSAGE PropsEntry",
		"Orders.Addr.AddrGeo.lat #1 OPTIONAL DOUBLE",
		"Orders.Addr.AddrLinesElement.sku #1 OPTIONAL STRING",
		"Orders.Addr.PropsEntry(map).key #1 OPTIONAL STRING",
		"Orders.Addr.PropsEntry(map).value #2 OPTIONAL STRING",
		"Orders.ItemsElement.sku #1 REQUIRED STRING",
		"Orders.ItemsElement.qty #2 OPTIONAL INT64",
		"Orders.AttrsEntry(map).key #1 OPTIONAL STRING",
		"Orders.AttrsEntry(map).value #2 OPTIONAL INT64",
		"Orders.ByDayValue.ok #1 OPTIONAL BOOL",
		"Orders.ByDayEntry(map).key #1 OPTIONAL INT32",
		"Orders.ByDayEntry(map).value #2 OPTIONAL MESSAGE ByDayValue",
	})

	md, b, err := zerobus.MessageDescriptorFromUcColumns(ucNested, "Orders")
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := proto.Marshal(dp); !slices.Equal(b, want) {
		t.Error("MessageDescriptorFromUcColumns's bytes are not DescriptorFromUcColumns's descriptor")
	}
	fields := md.Fields()
	if f := fields.ByName("attrs"); !f.IsMap() || f.MapKey().Kind() != protoreflect.StringKind || f.MapValue().Kind() != protoreflect.Int64Kind {
		t.Errorf("attrs: map %v", f.IsMap())
	}
	if f := fields.ByName("by_day"); !f.IsMap() || f.MapValue().Message().FullName() != "Orders.ByDayValue" {
		t.Errorf("by_day: map %v", f.IsMap())
	}
	if f := fields.ByName("addr").Message().Fields().ByName("props"); !f.IsMap() {
		t.Error("addr.props is not a map")
	}
	if f := fields.ByName("items"); !f.IsList() || f.Message().FullName() != "Orders.ItemsElement" {
		t.Errorf("items: list %v", f.IsList())
	}
}

// TestUcMessageNames: a struct's message name already declared in its
// message takes a number; DescriptorFromUcSchema names the message after
// schema and table.
func TestUcMessageNames(t *testing.T) {
	st := func(field string) string {
		return `{"type":"struct","fields":[{"name":"` + field + `","type":"string"}]}`
	}
	dp, err := zerobus.DescriptorFromUcColumns([]zerobus.UcColumn{
		{Name: "ship_to", TypeName: "STRUCT", Nullable: true, Position: 0, TypeJson: st("a")},
		{Name: "shipTo", TypeName: "STRUCT", Nullable: true, Position: 1, TypeJson: st("b")},
		{Name: "parent", TypeName: "STRUCT", Nullable: true, Position: 2, TypeJson: `{"type":"struct","fields":[` +
			`{"name":"foo","type":` + st("x") + `},{"name":"Foo","type":` + st("y") + `}]}`},
	}, "M")
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, fieldLines(t, dp, ""), []string{
		"M.ship_to #1 OPTIONAL MESSAGE ShipTo",
		"M.shipTo #2 OPTIONAL MESSAGE ShipTo2",
		"M.parent #3 OPTIONAL MESSAGE Parent",
		"M.ShipTo.a #1 OPTIONAL STRING",
		"M.ShipTo2.b #1 OPTIONAL STRING",
		"M.Parent.foo #1 OPTIONAL MESSAGE ParentFoo",
		"M.Parent.Foo #2 OPTIONAL MESSAGE ParentFoo2",
		"M.Parent.ParentFoo.x #1 OPTIONAL STRING",
		"M.Parent.ParentFoo2.y #1 OPTIONAL STRING",
	})

	col := []zerobus.UcColumn{{Name: "id", TypeName: "BIGINT", Position: 0}}
	for _, tc := range []struct{ schema, table, want string }{
		{"analytics", "events", "AnalyticsEvents"},
		{"sales-eu", "orders v2", "SalesEuOrdersV2"},
		{"", "2024", "M2024"},
		{"default", "air_quality", "DefaultAirQuality"},
	} {
		dp, err := zerobus.DescriptorFromUcSchema(&zerobus.UcTableSchema{Name: tc.table, CatalogName: "main", SchemaName: tc.schema, Columns: col})
		if err != nil || dp.GetName() != tc.want {
			t.Errorf("schema %q table %q: %q, %v; want %q", tc.schema, tc.table, dp.GetName(), err, tc.want)
		}
		md, _, err := zerobus.MessageDescriptorFromUcSchema(&zerobus.UcTableSchema{Name: tc.table, SchemaName: tc.schema, Columns: col})
		if err != nil || string(md.FullName()) != tc.want {
			t.Errorf("MessageDescriptorFromUcSchema: %v, %v; want %q", md, err, tc.want)
		}
	}
}

// TestUcErrors: every schema without a descriptor is a *SchemaError of
// the official kind, naming the column or field; the messages the official
// SDK writes for names, types and missing type_json are its own.
func TestUcErrors(t *testing.T) {
	arr := func(elem string) string { return `{"type":"array","elementType":` + elem + `}` }
	mp := func(key, value string) string {
		return `{"type":"map","keyType":` + key + `,"valueType":` + value + `}`
	}
	st := func(name, typ string) string {
		return `{"type":"struct","fields":[{"name":"` + name + `","type":` + typ + `}]}`
	}
	one := func(name, typeName, typeJSON string) []zerobus.UcColumn {
		return []zerobus.UcColumn{{Name: name, TypeName: typeName, TypeJson: typeJSON, Nullable: true}}
	}
	for _, tc := range []struct {
		name    string
		columns []zerobus.UcColumn
		msgName string
		kind    string
		field   string
		message string // the whole message, or its start when it ends in "..."
	}{
		{"digit first", one("1bad", "STRING", ""), "M", "InvalidFieldName", "1bad", "invalid field name '1bad': cannot start with a digit"},
		{"empty name", one("", "STRING", ""), "M", "InvalidFieldName", "", "invalid field name '': empty"},
		{"space", one("a b", "STRING", ""), "M", "InvalidFieldName", "a b", "invalid field name 'a b': only alphanumeric and '_' characters allowed"},
		{"non-ASCII", one("größe", "INT", ""), "M", "InvalidFieldName", "größe", "invalid field name 'größe': only alphanumeric and '_' characters allowed"},
		{"keyword", one("message", "STRING", ""), "M", "InvalidFieldName", "message", "invalid field name 'message': reserved proto keyword"},
		{"nested bad name", one("s", "STRUCT", st("bad-name", `"string"`)), "M", "InvalidFieldName", "bad-name", "invalid field name 'bad-name': only alphanumeric and '_' characters allowed"},
		{"nested keyword", one("s", "ARRAY", arr(st("int32", `"long"`))), "M", "InvalidFieldName", "int32", "invalid field name 'int32': reserved proto keyword"},
		{"nested empty name", one("s", "STRUCT", st("", `"string"`)), "M", "InvalidFieldName", "", "invalid field name '': empty"},
		{"nested digit", one("s", "MAP", mp(`"string"`, st("2x", `"long"`))), "M", "InvalidFieldName", "2x", "invalid field name '2x': cannot start with a digit"},
		{"two of one name", []zerobus.UcColumn{{Name: "a", TypeName: "INT"}, {Name: "a", TypeName: "INT", Position: 1}}, "M", "InvalidFieldName", "a", "invalid field name 'a': ..."},
		{"unknown type", one("x", "INTERVAL", ""), "M", "UnsupportedType", "x", "unsupported Databricks type 'INTERVAL'"},
		{"lower case type", one("x", "string", ""), "M", "UnsupportedType", "x", "unsupported Databricks type 'string'"},
		{"struct without type_json", one("x", "STRUCT", ""), "M", "MissingTypeJson", "x", "missing type_json for complex column 'x'"},
		{"map without type_json", one("x", "MAP", ""), "M", "MissingTypeJson", "x", "missing type_json for complex column 'x'"},
		{"type_json cut short", one("x", "ARRAY", `{"type":`), "M", "InvalidTypeJson", "x", "failed to parse type_json for column 'x': ..."},
		{"nested unknown type", one("x", "STRUCT", st("in", `"interval"`)), "M", "InvalidTypeJson", "x", "failed to parse type_json for column 'x': ..."},
		{"unknown complex type", one("x", "STRUCT", `{"type":"udt"}`), "M", "InvalidTypeJson", "x", "failed to parse type_json for column 'x': ..."},
		{"too deep", one("x", "ARRAY", strings.Repeat(`{"type":"array","elementType":`, 200)+`"int"`+strings.Repeat("}", 200)), "M", "InvalidTypeJson", "x", "failed to parse type_json for column 'x': ..."},
		{"array of arrays", one("x", "ARRAY", arr(arr(`"string"`))), "M", "Invalid", "x", "field 'x': ..."},
		{"array of maps", one("x", "ARRAY", arr(mp(`"string"`, `"string"`))), "M", "Invalid", "x", "field 'x': ..."},
		{"double key", one("x", "MAP", mp(`"double"`, `"string"`)), "M", "Invalid", "x", "field 'x': ..."},
		{"binary key", one("x", "MAP", mp(`"binary"`, `"string"`)), "M", "Invalid", "x", "field 'x': ..."},
		{"struct key", one("x", "MAP", mp(st("k", `"string"`), `"string"`)), "M", "Invalid", "x", "field 'x': ..."},
		{"map of arrays", one("x", "MAP", mp(`"string"`, arr(`"string"`))), "M", "Invalid", "x", "field 'x': ..."},
		{"nested array of arrays", one("x", "STRUCT", st("in", arr(arr(`"long"`)))), "M", "Invalid", "x.in", "field 'x.in': ..."},
		{"one position twice", []zerobus.UcColumn{{Name: "a", TypeName: "INT"}, {Name: "b", TypeName: "INT"}}, "M", "Invalid", "b", "field 'b': ..."},
		{"reserved number", []zerobus.UcColumn{{Name: "a", TypeName: "INT", Position: 18999}}, "M", "Invalid", "a", "field 'a': ..."},
		{"no columns", nil, "M", "Invalid", "", "no columns"},
		{"only hidden columns", []zerobus.UcColumn{{Name: "a", TypeName: "INT", Position: -1}}, "M", "Invalid", "", "no columns"},
		{"empty message name", one("a", "INT", ""), "", "Invalid", "", `message name "" is not a proto identifier`},
		{"message name not an identifier", one("a", "INT", ""), "my-msg", "Invalid", "", `message name "my-msg" is not a proto identifier`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := zerobus.DescriptorFromUcColumns(tc.columns, tc.msgName)
			var se *zerobus.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SchemaError", err)
			}
			prefix, cut := strings.CutSuffix(tc.message, "...")
			if se.Kind != tc.kind || se.Field != tc.field || err.Error() != se.Message ||
				!cut && se.Message != tc.message || cut && !strings.HasPrefix(se.Message, prefix) {
				t.Errorf("got %+v; want kind %s, field %q, message %q", *se, tc.kind, tc.field, tc.message)
			}
			if _, _, err2 := zerobus.MessageDescriptorFromUcColumns(tc.columns, tc.msgName); !reflect.DeepEqual(err2, err) {
				t.Errorf("MessageDescriptorFromUcColumns: %v, want %v", err2, err)
			}
		})
	}
	var se *zerobus.SchemaError
	if _, err := zerobus.DescriptorFromUcSchema(nil); !errors.As(err, &se) || se.Kind != "Invalid" {
		t.Errorf("nil schema: %v", err)
	}
	if _, _, err := zerobus.MessageDescriptorFromUcSchema(nil); !errors.As(err, &se) || se.Kind != "Invalid" {
		t.Errorf("nil schema: %v", err)
	}
}

// TestUcJSON: the columns' JSON as the tables API writes it (a column
// without "nullable" is nullable; other fields ignored), the official
// tags, and a table decoded and turned into a descriptor.
func TestUcJSON(t *testing.T) {
	for _, tc := range []struct {
		json     string
		nullable bool
	}{
		{`{"name":"x","type_name":"STRING","position":3}`, true},
		{`{"name":"x","type_name":"STRING","position":3,"nullable":true}`, true},
		{`{"name":"x","type_name":"STRING","position":3,"nullable":false}`, false},
	} {
		var c zerobus.UcColumn
		if err := json.Unmarshal([]byte(tc.json), &c); err != nil {
			t.Fatal(err)
		}
		if want := (zerobus.UcColumn{Name: "x", TypeName: "STRING", Nullable: tc.nullable, Position: 3}); c != want {
			t.Errorf("%s: %+v, want %+v", tc.json, c, want)
		}
	}
	var c zerobus.UcColumn
	if err := json.Unmarshal([]byte(`{"name":"x","position":4294967296}`), &c); err == nil {
		t.Errorf("a position beyond int32 decoded: %+v", c)
	}
	if err := json.Unmarshal([]byte(`{"name":`), &c); err == nil {
		t.Error("bad JSON decoded")
	}

	notNull := zerobus.UcColumn{Name: "id", TypeName: "BIGINT", TypeText: "bigint", Position: 2}
	b, err := json.Marshal(notNull)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"id","type_name":"BIGINT","type_text":"bigint","type_json":"","Nullable":false,"position":2}`; string(b) != want {
		t.Errorf("marshalled %s, want %s", b, want)
	}
	var back zerobus.UcColumn
	if err := json.Unmarshal(b, &back); err != nil || back != notNull {
		t.Errorf("round trip: %+v, %v", back, err)
	}

	tags := func(v any) []string {
		var s []string
		for f := range reflect.TypeOf(v).Fields() {
			s = append(s, string(f.Tag))
		}
		return s
	}
	if got, want := tags(zerobus.UcColumn{}), []string{`json:"name"`, `json:"type_name"`, `json:"type_text"`, `json:"type_json"`, ``, `json:"position"`}; !slices.Equal(got, want) {
		t.Errorf("UcColumn tags %q, want %q", got, want)
	}
	if got, want := tags(zerobus.UcTableSchema{}), []string{`json:"name"`, `json:"catalog_name"`, `json:"schema_name"`, `json:"columns"`}; !slices.Equal(got, want) {
		t.Errorf("UcTableSchema tags %q, want %q", got, want)
	}

	answer := `{"name":"air_quality","catalog_name":"main","schema_name":"default","full_name":"main.default.air_quality",
		"table_type":"MANAGED","owner":"someone","columns":[
		{"name":"device_name","type_name":"STRING","type_text":"string","position":0,"nullable":true,"comment":"where"},
		{"name":"temp","type_name":"INT","type_text":"int","position":1,"nullable":false},
		{"name":"humidity","type_name":"LONG","type_text":"bigint","position":2},
		{"name":"readings","type_name":"ARRAY","type_text":"array<double>","type_json":"{\"name\":\"readings\",\"type\":{\"type\":\"array\",\"elementType\":\"double\",\"containsNull\":true},\"nullable\":true,\"metadata\":{}}","position":3}]}`
	var ts zerobus.UcTableSchema
	if err := json.Unmarshal([]byte(answer), &ts); err != nil {
		t.Fatal(err)
	}
	if ts.Name != "air_quality" || ts.CatalogName != "main" || ts.SchemaName != "default" || len(ts.Columns) != 4 || !ts.Columns[2].Nullable || ts.Columns[1].Nullable {
		t.Fatalf("decoded %+v", ts)
	}
	dp, err := zerobus.DescriptorFromUcSchema(&ts)
	if err != nil {
		t.Fatal(err)
	}
	sameLines(t, fieldLines(t, dp, ""), []string{
		"DefaultAirQuality.device_name #1 OPTIONAL STRING",
		"DefaultAirQuality.temp #2 REQUIRED INT32",
		"DefaultAirQuality.humidity #3 OPTIONAL INT64",
		"DefaultAirQuality.readings #4 REPEATED DOUBLE",
	})
}

// sensorColumns are the columns of the official dynamic example.
var sensorColumns = []zerobus.UcColumn{
	{Name: "device_name", TypeName: "STRING", Nullable: true, Position: 0},
	{Name: "temp", TypeName: "INT", Nullable: false, Position: 1},
	{Name: "humidity", TypeName: "BIGINT", Nullable: true, Position: 2},
}

// TestUcMessageDescriptor: the message descriptor is the proto2 message the
// bytes describe: NOT NULL required, nullable with presence, so that a zero
// is sent as zero and a record without a NOT NULL column is refused before
// it leaves.
func TestUcMessageDescriptor(t *testing.T) {
	md, b, err := zerobus.MessageDescriptorFromUcColumns(sensorColumns, "SensorReading")
	if err != nil {
		t.Fatal(err)
	}
	var dp descriptorpb.DescriptorProto
	if err := proto.Unmarshal(b, &dp); err != nil || dp.GetName() != "SensorReading" || len(dp.GetField()) != 3 {
		t.Fatalf("bytes: %v, %v", &dp, err)
	}
	if md.FullName() != "SensorReading" || md.Syntax() != protoreflect.Proto2 {
		t.Errorf("message %s, %v", md.FullName(), md.Syntax())
	}
	temp, humidity := md.Fields().ByName("temp"), md.Fields().ByName("humidity")
	if temp.Cardinality() != protoreflect.Required || !humidity.HasPresence() || humidity.Number() != 3 {
		t.Errorf("temp %v, humidity presence %v number %d", temp.Cardinality(), humidity.HasPresence(), humidity.Number())
	}
	msg := dynamicpb.NewMessage(md)
	msg.Set(md.Fields().ByName("device_name"), protoreflect.ValueOfString("a"))
	msg.Set(temp, protoreflect.ValueOfInt32(0))
	msg.Set(humidity, protoreflect.ValueOfInt64(0))
	data, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	// device_name "a" (3 bytes), temp 0 and humidity 0 (2 bytes each), in
	// an order dynamicpb leaves open.
	back := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(data, back); err != nil || len(data) != 7 || !back.Has(temp) || !back.Has(humidity) ||
		back.Get(temp).Int() != 0 || back.Get(humidity).Int() != 0 {
		t.Errorf("record % x (%v): temp set %v, humidity set %v", data, err, back.Has(temp), back.Has(humidity))
	}
	msg.Clear(temp)
	if _, err := proto.Marshal(msg); err == nil {
		t.Error("a record without its NOT NULL column marshalled")
	}
}

// TestUcSchemaProgram: a program that decodes the tables API's answer
// itself, builds the message with MessageDescriptorFromUcSchema and
// ingests a batch of dynamicpb records with a struct, an array and a map
// (ExampleMessageDescriptorFromUcColumns is the official example's
// program); the server, which checks every record against the descriptor,
// holds them as sent.
func TestUcSchemaProgram(t *testing.T) {
	answer := `{"name":"air_quality","catalog_name":"main","schema_name":"default","columns":[
		{"name":"device","type_name":"STRUCT","position":0,"nullable":false,
		 "type_json":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":false},{\"name\":\"site\",\"type\":\"string\"}]}"},
		{"name":"readings","type_name":"ARRAY","position":1,"type_json":"{\"type\":\"array\",\"elementType\":\"double\"}"},
		{"name":"labels","type_name":"MAP","position":2,"type_json":"{\"type\":\"map\",\"keyType\":\"string\",\"valueType\":\"string\"}"}]}`
	var schema zerobus.UcTableSchema
	if err := json.Unmarshal([]byte(answer), &schema); err != nil {
		t.Fatal(err)
	}
	md, desc, err := zerobus.MessageDescriptorFromUcSchema(&schema)
	if err != nil {
		t.Fatal(err)
	}
	device, readings, labels := md.Fields().ByName("device"), md.Fields().ByName("readings"), md.Fields().ByName("labels")
	id, site := device.Message().Fields().ByName("id"), device.Message().Fields().ByName("site")

	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	options := zerobus.DefaultStreamConfigurationOptions()
	options.RecordType = zerobus.RecordTypeProto
	stream, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable, DescriptorProto: desc}, testClientID, testClientSecret, options)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()

	batch := make([]interface{}, 0, 3)
	for i := range 3 {
		m := dynamicpb.NewMessage(md)
		d := m.Mutable(device).Message()
		d.Set(id, protoreflect.ValueOfInt64(int64(100+i)))
		if i != 1 {
			d.Set(site, protoreflect.ValueOfString("lab"))
		}
		for j := range i {
			m.Mutable(readings).List().Append(protoreflect.ValueOfFloat64(float64(j) + 0.5))
		}
		m.Mutable(labels).Map().Set(protoreflect.ValueOfString("k").MapKey(), protoreflect.ValueOfString(fmt.Sprint("v", i)))
		data, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, data)
	}
	if offset, err := stream.IngestRecordsOffset(batch); err != nil || offset != 0 {
		t.Fatalf("batch: offset %d, %v", offset, err)
	}
	if err := stream.Flush(); err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, rec := range storedRecords(t, l.Server, testTable) {
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(rec, m); err != nil {
			t.Fatal(err)
		}
		d := m.Get(device).Message()
		var rs []float64
		for j := range m.Get(readings).List().Len() {
			rs = append(rs, m.Get(readings).List().Get(j).Float())
		}
		got = append(got, fmt.Sprintf("%s %d site=%v:%s readings=%v k=%s", md.FullName(), d.Get(id).Int(), d.Has(site), d.Get(site).String(),
			rs, m.Get(labels).Map().Get(protoreflect.ValueOfString("k").MapKey()).String()))
	}
	sameLines(t, got, []string{
		"DefaultAirQuality 100 site=true:lab readings=[] k=v0",
		"DefaultAirQuality 101 site=false: readings=[0.5] k=v1",
		"DefaultAirQuality 102 site=true:lab readings=[0.5 1.5] k=v2",
	})

	// device.id is NOT NULL: a record without it does not marshal.
	m := dynamicpb.NewMessage(md)
	m.Mutable(device).Message().Set(site, protoreflect.ValueOfString("lab"))
	if _, err := proto.Marshal(m); err == nil {
		t.Error("a record without device.id marshalled")
	}
}
