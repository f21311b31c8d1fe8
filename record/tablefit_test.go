package record_test

// ProtoFit: stream messages against a table's columns (fitTable), the
// ones that fit and those refused with the field named, every scalar
// column kind against every proto kind, and records of a fitted message
// written by hand, accepted and refused.

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// fitTable has NOT NULL columns at the top and inside STRUCTs, an ARRAY of
// STRUCTs, a MAP of STRUCTs, a MAP keyed by INT, a column whose name is
// not a proto identifier, and nullable columns a message may leave out.
func fitTable(t testing.TB) *record.TableChecker {
	t.Helper()
	c, err := record.NewTableChecker(&record.TableSchema{Name: "orders", Columns: []record.Column{
		{Name: "id", TypeName: "BIGINT", Position: 0},
		{Name: "name", TypeName: "STRING", Position: 1, Nullable: true},
		{Name: "ship_to", TypeName: "STRUCT", Position: 2, TypeJSON: `{"type":"struct","fields":[
			{"name":"street","type":"string","nullable":false},{"name":"zip","type":"integer","nullable":true}]}`},
		{Name: "items", TypeName: "ARRAY", Position: 3, Nullable: true, TypeJSON: `{"type":"array","elementType":{"type":"struct","fields":[
			{"name":"sku","type":"string","nullable":false},{"name":"n","type":"integer","nullable":true}]}}`},
		{Name: "attrs", TypeName: "MAP", Position: 4, Nullable: true, TypeJSON: `{"type":"map","keyType":"string",
			"valueType":{"type":"struct","fields":[{"name":"x","type":"double","nullable":false}]}}`},
		{Name: "unit price", TypeName: "DOUBLE", Position: 5, Nullable: true},
		{Name: "day", TypeName: "DATE", Position: 6, Nullable: true},
		{Name: "counts", TypeName: "MAP", Position: 7, Nullable: true, TypeJSON: `{"type":"map","keyType":"integer","valueType":"long"}`},
		{Name: "kind", TypeName: "STRING", Position: 8, Nullable: true},
		{Name: "ts", TypeName: "TIMESTAMP", Position: 9, Nullable: true},
		{Name: "note", TypeName: "STRING", Position: 10, Nullable: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// orderText is a proto2 message that fits fitTable without being its
// descriptor: id optional though NOT NULL, float for the DOUBLE, sint32
// for the DATE, an enum for a STRING, sfixed64 named by its json_name for
// the TIMESTAMP, no field for the nullable note.
const orderText = `
	name: "Order"
	field { name: "id"         number: 1  label: LABEL_OPTIONAL type: TYPE_INT64 }
	field { name: "name"       number: 2  label: LABEL_OPTIONAL type: TYPE_STRING }
	field { name: "ship_to"    number: 3  label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".shop.Order.Addr" }
	field { name: "items"      number: 4  label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".shop.Order.Item" }
	field { name: "attrs"      number: 5  label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".shop.Order.AttrsEntry" }
	field { name: "unit_price" number: 6  label: LABEL_OPTIONAL type: TYPE_FLOAT }
	field { name: "day"        number: 7  label: LABEL_OPTIONAL type: TYPE_SINT32 }
	field { name: "counts"     number: 8  label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".shop.Order.CountsEntry" }
	field { name: "kind"       number: 9  label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".shop.Order.Kind" }
	field { name: "when"       number: 10 label: LABEL_OPTIONAL type: TYPE_SFIXED64 json_name: "ts" }
	nested_type { name: "Addr"
		field { name: "street" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
		field { name: "zip"    number: 2 label: LABEL_OPTIONAL type: TYPE_INT32 } }
	nested_type { name: "Item"
		field { name: "sku" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
		field { name: "n"   number: 2 label: LABEL_OPTIONAL type: TYPE_INT32 } }
	nested_type { name: "AttrsEntry" options { map_entry: true }
		field { name: "key"   number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }
		field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".shop.Order.Attr" } }
	nested_type { name: "Attr"
		field { name: "x" number: 1 label: LABEL_OPTIONAL type: TYPE_DOUBLE } }
	nested_type { name: "CountsEntry" options { map_entry: true }
		field { name: "key"   number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }
		field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_INT64 } }
	enum_type { name: "Kind" value { name: "RETAIL" number: 0 } value { name: "BULK" number: 1 } }
`

func orderDescriptor(t testing.TB) *descriptorpb.DescriptorProto {
	t.Helper()
	dp := &descriptorpb.DescriptorProto{}
	if err := prototext.Unmarshal([]byte(orderText), dp); err != nil {
		t.Fatal(err)
	}
	return dp
}

// messageOf builds dp's message as a stream's descriptor is built:
// serialized, then read back with record.MessageDescriptor.
func messageOf(t testing.TB, dp *descriptorpb.DescriptorProto) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := record.MessageDescriptor(mustMarshal(t, dp))
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// field returns dp's field named name, or one of a nested type's
// ("Addr.street").
func field(t testing.TB, dp *descriptorpb.DescriptorProto, name string) *descriptorpb.FieldDescriptorProto {
	t.Helper()
	if msg, rest, ok := strings.Cut(name, "."); ok {
		for _, n := range dp.GetNestedType() {
			if n.GetName() == msg {
				return field(t, n, rest)
			}
		}
		t.Fatalf("no nested type %s", msg)
	}
	for _, f := range dp.GetField() {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("no field %s", name)
	return nil
}

func TestProtoFitAccepts(t *testing.T) {
	c := fitTable(t)
	// The table's own descriptor, as DescriptorFromColumns makes it.
	own, err := c.Schema().Descriptor()
	if err != nil {
		t.Fatal(err)
	}
	for what, md := range map[string]protoreflect.MessageDescriptor{
		"the table's descriptor": messageOf(t, own),
		"Order":                  messageOf(t, orderDescriptor(t)),
	} {
		f, err := c.ProtoFit(md)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if f.Descriptor() != md {
			t.Errorf("%s: Descriptor() is another message", what)
		}
	}
	// Only the NOT NULL columns, named by json_name where the name is
	// not the column's: what a nullable column lacks is fine.
	minimal := &descriptorpb.DescriptorProto{}
	if err := prototext.Unmarshal([]byte(`
		name: "Min"
		field { name: "key"  number: 1 label: LABEL_REQUIRED type: TYPE_SFIXED64 json_name: "id" }
		field { name: "addr" number: 2 label: LABEL_REQUIRED type: TYPE_MESSAGE type_name: ".Min.A" json_name: "ship_to" }
		nested_type { name: "A" field { name: "street" number: 1 label: LABEL_REQUIRED type: TYPE_STRING } }
	`), minimal); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ProtoFit(messageOf(t, minimal)); err != nil {
		t.Errorf("minimal: %v", err)
	}
}

// TestProtoFitRefuses: Order, changed in one place, refused with the field
// (or the NOT NULL column) that does not fit.
func TestProtoFitRefuses(t *testing.T) {
	c := fitTable(t)
	typ := func(ty descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto_Type {
		return ty.Enum()
	}
	for _, tc := range []struct {
		what   string
		change func(dp *descriptorpb.DescriptorProto)
		field  string
		reason string // a part of the reason
	}{
		{"a field that names no column", func(dp *descriptorpb.DescriptorProto) {
			dp.Field = append(dp.Field, &descriptorpb.FieldDescriptorProto{Name: strPtr("nope"), Number: int32Ptr(20),
				Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: typ(descriptorpb.FieldDescriptorProto_TYPE_STRING)})
		}, "nope", `no column is named "nope"`},
		{"a nested field that names no column", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "Addr.zip").Name = strPtr("city")
		}, "ship_to.city", `no column is named "city"`},
		{"two fields for one column", func(dp *descriptorpb.DescriptorProto) {
			f := field(t, dp, "name")
			f.Name, f.JsonName, f.Type = strPtr("price"), strPtr("unit price"), typ(descriptorpb.FieldDescriptorProto_TYPE_DOUBLE)
		}, "unit_price", `column "unit price" is already the field "price"`},
		{"a NOT NULL column without a field", func(dp *descriptorpb.DescriptorProto) {
			dp.Field = dp.Field[1:] // id
		}, "id", "the column is NOT NULL and shop.Order has no field for it"},
		{"a NOT NULL STRUCT field without a field", func(dp *descriptorpb.DescriptorProto) {
			dp.NestedType[0].Field = dp.NestedType[0].Field[1:] // Addr.street
		}, "ship_to.street", "NOT NULL"},
		{"a NOT NULL field of an ARRAY's STRUCT without a field", func(dp *descriptorpb.DescriptorProto) {
			dp.NestedType[1].Field = dp.NestedType[1].Field[1:] // Item.sku
		}, "items[].sku", "NOT NULL"},
		{"uint64 for BIGINT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "id").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_UINT64)
		}, "id", "the field is uint64 and the column BIGINT, which takes only int64, sint64, sfixed64, int32, sint32, sfixed32"},
		{"fixed64 for BIGINT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "id").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_FIXED64)
		}, "id", "the field is fixed64 and the column BIGINT,"},
		{"string for BIGINT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "id").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_STRING)
		}, "id", "the field is string and the column BIGINT,"},
		{"an enum for BIGINT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "id").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_ENUM)
			field(t, dp, "id").TypeName = strPtr(".shop.Order.Kind")
		}, "id", "the field is enum and the column BIGINT,"},
		{"a repeated field for BIGINT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "id").Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		}, "id", "the column is BIGINT and needs a singular field, not a repeated int64"},
		{"int32 for TIMESTAMP", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "when").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_INT32)
		}, "when", "the field is int32 and the column TIMESTAMP,"},
		{"int64 for DATE", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "day").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_INT64)
		}, "day", "the field is int64 and the column DATE,"},
		{"bytes for STRING", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "name").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_BYTES)
		}, "name", "the field is bytes and the column STRING,"},
		{"a scalar for a STRUCT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "ship_to").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_STRING)
			field(t, dp, "ship_to").TypeName = nil
		}, "ship_to", "the column is a STRUCT and needs a message field, not string"},
		{"a message for a STRING", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "name").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_MESSAGE)
			field(t, dp, "name").TypeName = strPtr(".shop.Order.Addr")
		}, "name", "the field is message and the column STRING,"},
		{"a singular field for an ARRAY", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "items").Label = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
		}, "items", "the column is an ARRAY and needs a repeated field, not a singular message"},
		{"a map for an ARRAY", func(dp *descriptorpb.DescriptorProto) {
			entry := proto.Clone(dp.NestedType[4]).(*descriptorpb.DescriptorProto) // CountsEntry
			entry.Name = strPtr("ItemsEntry")
			dp.NestedType = append(dp.NestedType, entry)
			field(t, dp, "items").TypeName = strPtr(".shop.Order.ItemsEntry")
		}, "items", "the column is an ARRAY and needs a repeated field, not a map"},
		{"a repeated message for a MAP", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "attrs").TypeName = strPtr(".shop.Order.Attr")
		}, "attrs", "the column is a MAP and needs a map field, not a repeated message"},
		{"a wrong field in an ARRAY's STRUCT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "Item.sku").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_INT32)
		}, "items[].sku", "the field is int32 and the column STRING,"},
		{"a MAP's key of another kind", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "AttrsEntry.key").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_INT64)
		}, "attrs{key}", "the field is int64 and the column STRING,"},
		{"an unsigned key for an INT key", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "CountsEntry.key").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_UINT32)
		}, "counts{key}", "the field is uint32 and the column INT,"},
		{"a wrong field in a MAP's STRUCT", func(dp *descriptorpb.DescriptorProto) {
			field(t, dp, "Attr.x").Type = typ(descriptorpb.FieldDescriptorProto_TYPE_STRING)
		}, "attrs{value}.x", "the field is string and the column DOUBLE,"},
		{"a scalar value for a MAP's STRUCT", func(dp *descriptorpb.DescriptorProto) {
			v := field(t, dp, "AttrsEntry.value")
			v.Type, v.TypeName = typ(descriptorpb.FieldDescriptorProto_TYPE_DOUBLE), nil
		}, "attrs{value}", "the column is a STRUCT and needs a message field, not double"},
	} {
		dp := orderDescriptor(t)
		tc.change(dp)
		f, err := c.ProtoFit(messageOf(t, dp))
		var fe *record.FitError
		if f != nil || !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) {
			t.Errorf("%s: %v; want a *FitError at %q with %q", tc.what, err, tc.field, tc.reason)
		}
	}
	if f, err := c.ProtoFit(nil); f != nil || err == nil {
		t.Errorf("ProtoFit(nil) = %v, %v", f, err)
	}
}

func strPtr(s string) *string { return &s }
func int32Ptr(n int32) *int32 { return &n }

// TestProtoFitScalarKinds: each scalar column kind against each proto
// kind, in a one-column table; the kinds a column takes written out.
func TestProtoFitScalarKinds(t *testing.T) {
	const (
		i64 = "int64 sint64 sfixed64"
		i32 = "int32 sint32 sfixed32"
	)
	takes := map[string]string{
		"STRING": "string enum", "VARIANT": "string", "DECIMAL": "string",
		"BIGINT": i64 + " " + i32, "TIMESTAMP": i64, "TIMESTAMP_NTZ": i64,
		"INT": i32, "SMALLINT": i32, "TINYINT": i32, "DATE": i32,
		"DOUBLE": "double float", "FLOAT": "float", "BOOLEAN": "bool", "BINARY": "bytes",
	}
	kinds := []string{"double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string",
		"bytes", "uint32", "enum", "sfixed32", "sfixed64", "sint32", "sint64", "message"}
	for column, accepted := range takes {
		c, err := record.NewTableChecker(&record.TableSchema{Name: "t", Columns: []record.Column{{Name: "c", TypeName: column}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range kinds {
			dp := &descriptorpb.DescriptorProto{}
			text := `name: "M" enum_type { name: "E" value { name: "Z" number: 0 } } nested_type { name: "N" }
				field { name: "c" number: 1 label: LABEL_OPTIONAL type: TYPE_` + strings.ToUpper(kind)
			switch kind {
			case "enum":
				text += ` type_name: ".M.E"`
			case "message":
				text += ` type_name: ".M.N"`
			}
			if err := prototext.Unmarshal([]byte(text+` }`), dp); err != nil {
				t.Fatal(err)
			}
			_, err := c.ProtoFit(messageOf(t, dp))
			want := strings.Contains(" "+accepted+" ", " "+kind+" ")
			if (err == nil) != want {
				t.Errorf("a %s field for a %s column: %v, want accepted %v", kind, column, err, want)
			}
		}
	}
}

// Hand-encoded fields of Order.
func bytesField(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func strField(num protowire.Number, s string) []byte { return bytesField(num, []byte(s)) }

func fixed32Field(num protowire.Number, f uint32) []byte {
	return protowire.AppendFixed32(protowire.AppendTag(nil, num, protowire.Fixed32Type), f)
}

func doubleField(num protowire.Number, f uint64) []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, num, protowire.Fixed64Type), f)
}

// TestProtoFitCheck: records of Order, written by hand.
func TestProtoFitCheck(t *testing.T) {
	c := fitTable(t)
	md := messageOf(t, orderDescriptor(t))
	f, err := c.ProtoFit(md)
	if err != nil {
		t.Fatal(err)
	}
	id := varintField(1, 7)
	ship := bytesField(3, strField(1, "Main St")) // ship_to { street: "Main St" }
	item := func(b ...[]byte) []byte { return bytesField(4, cat(b...)) }
	attr := func(key string, value []byte) []byte {
		return bytesField(5, cat(strField(1, key), bytesField(2, value)))
	}
	x := doubleField(1, 0x3ff8000000000000) // x: 1.5
	for _, tc := range []struct {
		what  string
		rec   []byte
		field string // the *FitError's field; "" for a record accepted
	}{
		{"the NOT NULL columns", cat(id, ship), ""},
		{"every field", cat(id, strField(2, "n"), bytesField(3, cat(strField(1, "s"), varintField(2, 94105))),
			item(strField(1, "a"), varintField(2, 2)), item(strField(1, "b")),
			attr("k", x), attr("", x), fixed32Field(6, 0x3fc00000), varintField(7, 3),
			bytesField(8, cat(varintField(1, 1), varintField(2, 5))), varintField(9, 1)), ""},
		{"an empty STRUCT element's NOT NULL field, set empty", cat(id, ship, item(strField(1, ""))), ""},
		{"the NOT NULL id left out", ship, "id"},
		{"the NOT NULL STRUCT left out", id, "ship_to"},
		{"the NOT NULL STRUCT's field left out", cat(id, bytesField(3, varintField(2, 1))), "ship_to.street"},
		{"an ARRAY's STRUCT's NOT NULL field left out", cat(id, ship, item(strField(1, "a")), item(varintField(2, 1))), "items[1].sku"},
		{"a MAP's STRUCT's NOT NULL field left out", cat(id, ship, attr("k", nil)), `attrs["k"].x`},
	} {
		err := f.Check(tc.rec)
		var fe *record.FitError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.what, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: %v; want a *FitError at %q", tc.what, err, tc.field)
		}
	}
	// What does not decode is refused as a Checker of the stream refuses
	// it, with its error.
	checker, err := record.NewChecker(ingestpb.RecordType_PROTO, mustMarshal(t, orderDescriptor(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what    string
		rec     []byte
		refused bool
	}{
		{"a field the message lacks", cat(id, ship, varintField(15, 1)), true},
		{"a value outside the closed enum", cat(id, ship, varintField(9, 5)), true},
		{"not protobuf", []byte{0xff, 0xff, 0xff}, true},
		{"a nested field the message lacks", cat(id, ship, item(strField(1, "a"), varintField(9, 1))), true},
		{"proto2 text in invalid UTF-8", cat(id, ship, strField(2, "\xff")), false},
	} {
		want := checker.Check(tc.rec)
		got := f.Check(tc.rec)
		var fe *record.FitError
		if (want != nil) != tc.refused || errors.As(got, &fe) || (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("%s: Check = %v, the Checker's %v (refused: %v)", tc.what, got, want, tc.refused)
		}
	}
}

// TestProtoFitCheckProto3: a proto3 message, whose optional field of a NOT
// NULL column is checked and whose implicit scalars are not, and whose
// open enum for a STRING column must hold a named value.
func TestProtoFitCheckProto3(t *testing.T) {
	c := fitTable(t)
	fdp := &descriptorpb.FileDescriptorProto{}
	if err := prototext.Unmarshal([]byte(`
		name: "order3.proto" package: "shop" syntax: "proto3"
		message_type {
			name: "Order3"
			field { name: "id"      number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 proto3_optional: true oneof_index: 0 }
			field { name: "ship_to" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".shop.Order3.Addr" }
			field { name: "kind"    number: 3 label: LABEL_OPTIONAL type: TYPE_ENUM type_name: ".shop.Order3.Kind" }
			field { name: "tags"    number: 4 label: LABEL_REPEATED type: TYPE_ENUM type_name: ".shop.Order3.Kind" json_name: "name" }
			nested_type { name: "Addr" field { name: "street" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING } }
			enum_type { name: "Kind" value { name: "RETAIL" number: 0 } value { name: "BULK" number: 1 } }
			oneof_decl { name: "_id" }
		}
	`), fdp); err != nil {
		t.Fatal(err)
	}
	file, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	md := file.Messages().Get(0)
	_, err = c.ProtoFit(md)
	var fe *record.FitError
	if !errors.As(err, &fe) || fe.Field != "tags" || !strings.Contains(fe.Reason, "the column is STRING and needs a singular field, not a repeated enum") {
		t.Fatalf("ProtoFit(Order3) = %v; want tags refused", err)
	}
	// Without the repeated enum, it fits.
	fdp.MessageType[0].Field = fdp.MessageType[0].Field[:3]
	if file, err = protodesc.NewFile(fdp, protoregistry.GlobalFiles); err != nil {
		t.Fatal(err)
	}
	f, err := c.ProtoFit(file.Messages().Get(0))
	if err != nil {
		t.Fatal(err)
	}
	id := varintField(1, 7)
	ship := bytesField(2, nil) // ship_to {}: present; street, without presence, is ""
	for _, tc := range []struct {
		what  string
		rec   []byte
		field string
	}{
		{"id and an empty ship_to", cat(id, ship), ""},
		{"id zero, set", cat(varintField(1, 0), ship), ""},
		{"a named kind", cat(id, ship, varintField(3, 1)), ""},
		{"id left out", ship, "id"},
		{"ship_to left out", id, "ship_to"},
		{"a kind without a name", cat(id, ship, varintField(3, 7)), "kind"},
	} {
		err := f.Check(tc.rec)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.what, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: %v; want a *FitError at %q", tc.what, err, tc.field)
		}
	}
}

// TestProtoFitCheckRoundTrip: a JSON record the table accepts, converted
// by JSONToProto, is a record its own descriptor's fit accepts.
func TestProtoFitCheckRoundTrip(t *testing.T) {
	c := ordersChecker(t)
	f, err := c.ProtoFit(ordersType(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := record.JSONToProto(ordersType(t), []byte(`{"id": 1, "addr": {"zip": 1, "geo": {}}, "items": [{"days": [3]}], "by_day": {"2": {"ok": false}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(b); err != nil {
		t.Errorf("Check: %v", err)
	}
}
