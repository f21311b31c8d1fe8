package record_test

// DescriptorFromColumnsWith: field numbers from positions and nested
// messages named after their path, the official Go SDK's choices, against
// descriptors written by hand.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream/record"
)

// outline writes a message as its name, its fields in parentheses (a
// message-typed field as field:Type) and its nested messages in brackets,
// so that a descriptor compares on one line with one written by hand.
func outline(dp *descriptorpb.DescriptorProto) string {
	var fields, nested []string
	for _, f := range dp.GetField() {
		if tn := f.GetTypeName(); tn != "" {
			fields = append(fields, f.GetName()+":"+tn)
		} else {
			fields = append(fields, f.GetName())
		}
	}
	for _, n := range dp.GetNestedType() {
		nested = append(nested, outline(n))
	}
	s := dp.GetName() + "(" + strings.Join(fields, " ") + ")"
	if len(nested) > 0 {
		s += "[" + strings.Join(nested, " ") + "]"
	}
	return s
}

func TestNumberByPosition(t *testing.T) {
	cols := []record.Column{
		{Name: "a", TypeName: "STRING", Position: 8, Nullable: true},
		{Name: "b", TypeName: "INT", Position: 0},
		{Name: "c", TypeName: "STRUCT", Position: 4, Nullable: true,
			TypeJSON: `{"type":"struct","fields":[{"name":"x","type":"integer"},{"name":"y","type":"string"}]}`},
	}
	numbers := func(opts record.DescriptorOptions) string {
		dp, err := record.DescriptorFromColumnsWith("T", cols, opts)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, f := range dp.GetField() {
			s = append(s, fmt.Sprintf("%s=%d", f.GetName(), f.GetNumber()))
		}
		for _, f := range dp.GetNestedType()[0].GetField() {
			s = append(s, fmt.Sprintf("c.%s=%d", f.GetName(), f.GetNumber()))
		}
		return strings.Join(s, " ")
	}
	if got, want := numbers(record.DescriptorOptions{NumberByPosition: true}), "b=1 c=5 a=9 c.x=1 c.y=2"; got != want {
		t.Errorf("by position: %s, want %s", got, want)
	}
	if got, want := numbers(record.DescriptorOptions{}), "b=1 c=2 a=3 c.x=1 c.y=2"; got != want {
		t.Errorf("in order: %s, want %s", got, want)
	}

	for _, tc := range []struct {
		name    string
		columns []record.Column
		column  string
		reason  string
	}{
		{"same position", []record.Column{{Name: "a", TypeName: "INT"}, {Name: "b", TypeName: "INT"}}, "b", "another column has its position, 0"},
		{"reserved number", []record.Column{{Name: "a", TypeName: "INT", Position: 18999}}, "a", "field number 19000"},
		{"negative position", []record.Column{{Name: "a", TypeName: "INT", Position: -1}}, "a", "field number 0"},
		{"beyond the last number", []record.Column{{Name: "a", TypeName: "INT", Position: 1 << 29}}, "a", "field number 536870913"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := record.DescriptorFromColumnsWith("T", tc.columns, record.DescriptorOptions{NumberByPosition: true})
			var se *record.SchemaError
			if !errors.As(err, &se) || se.Column != tc.column || se.Fault != record.SchemaFaultTable || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %v, want a *SchemaError of fault table for column %q with %q", err, tc.column, tc.reason)
			}
		})
	}
	if _, err := record.DescriptorFromColumns("T", []record.Column{{Name: "a", TypeName: "INT"}, {Name: "b", TypeName: "INT"}}); err != nil {
		t.Errorf("two columns of one position, numbered in order: %v", err)
	}
}

// TestPathNames: nested messages named after their path, made unique in
// their message, and map entries named as protobuf requires; the result is
// a descriptor protobuf accepts.
func TestPathNames(t *testing.T) {
	st := func(fields string) string { return `{"type":"struct","fields":[` + fields + `]}` }
	arr := func(elem string) string { return `{"type":"array","elementType":` + elem + `}` }
	mp := func(key, value string) string {
		return `{"type":"map","keyType":` + key + `,"valueType":` + value + `}`
	}
	fld := func(name, typ string) string { return `{"name":"` + name + `","type":` + typ + `}` }
	cols := []record.Column{
		{Name: "ShipTo", TypeName: "INT", Position: 0},
		{Name: "ship_to", TypeName: "STRUCT", Position: 1, TypeJSON: st(
			fld("street", `"string"`) + "," +
				fld("geo", st(fld("lat", `"double"`))) + "," +
				fld("lines", arr(st(fld("sku", `"string"`)))) + "," +
				fld("attrs", mp(`"string"`, st(fld("v", `"long"`)))))},
		{Name: "items", TypeName: "ARRAY", Position: 2, TypeJSON: arr(st(fld("sku", `"string"`)))},
		{Name: "by_day", TypeName: "MAP", Position: 3, TypeJSON: mp(`"integer"`, st(fld("ok", `"boolean"`)))},
		{Name: "parent", TypeName: "STRUCT", Position: 4, TypeJSON: st(fld("foo", st(fld("a", `"string"`))) + "," + fld("Foo", st(fld("b", `"string"`))))},
		{Name: "tags", TypeName: "MAP", Position: 5, TypeJSON: mp(`"string"`, `"string"`)},
	}
	dp, err := record.DescriptorFromColumnsWith("Orders", cols, record.DescriptorOptions{PathNames: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "Orders(ShipTo ship_to:ShipTo2 items:ItemsElement by_day:ByDayEntry parent:Parent tags:TagsEntry)[" +
		"ShipTo2(street geo:ShipTo2Geo lines:ShipTo2LinesElement attrs:AttrsEntry)[" +
		"ShipTo2Geo(lat) ShipTo2LinesElement(sku) ShipTo2AttrsValue(v) AttrsEntry(key value:ShipTo2AttrsValue)] " +
		"ItemsElement(sku) ByDayValue(ok) ByDayEntry(key value:ByDayValue) " +
		"Parent(foo:ParentFoo Foo:ParentFoo2)[ParentFoo(a) ParentFoo2(b)] " +
		"TagsEntry(key value)]"
	if got := outline(dp); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	b, err := proto.Marshal(dp)
	if err != nil {
		t.Fatal(err)
	}
	md, err := record.MessageDescriptor(b)
	if err != nil {
		t.Fatalf("protobuf refuses the descriptor: %v", err)
	}
	if attrs := md.Fields().ByName("ship_to").Message().Fields().ByName("attrs"); !attrs.IsMap() || attrs.MapValue().Message().FullName() != "Orders.ShipTo2.ShipTo2AttrsValue" {
		t.Errorf("ship_to.attrs: map %v, value %v", attrs.IsMap(), attrs.MapValue().Message().FullName())
	}

	// The zero options name ship_to's message after the field alone:
	// ShipTo, the name of the first column.
	var se *record.SchemaError
	if _, err := record.DescriptorFromColumnsWith("Orders", cols, record.DescriptorOptions{}); !errors.As(err, &se) || se.Fault != record.SchemaFaultName {
		t.Errorf("zero options: %v, want a *SchemaError of fault name", err)
	}
}

func TestPascalName(t *testing.T) {
	for in, want := range map[string]string{
		"analytics_events": "AnalyticsEvents", "analytics.events": "AnalyticsEvents", "foo-bar": "FooBar",
		"1abc": "M1abc", "café": "Caf", "中文": "M", "": "M", "a_1b": "A1b", "ABC": "ABC", "x__y": "XY",
		"_1": "M1", "shipTo": "ShipTo",
	} {
		if got := record.PascalName(in); got != want {
			t.Errorf("PascalName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFaultNames(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{record.SchemaFaultTable.String(), "table"}, {record.SchemaFaultName.String(), "name"},
		{record.SchemaFaultType.String(), "type"}, {record.SchemaFaultTypeJSON.String(), "type_json"},
		{record.SchemaFaultNesting.String(), "nesting"}, {record.SchemaFault(0).String(), "SchemaFault(0)"},
		{record.FaultMissing.String(), "missing field"}, {record.ConvertFault(99).String(), "ConvertFault(99)"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
