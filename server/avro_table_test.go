package server

// avroFitsTable: writer schemas written by hand against a table's columns
// written by hand, every column type among them; the ones that fit, and
// those refused with the field named.

import (
	"errors"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/record"
)

// avroTestTable: a NOT NULL BIGINT and STRUCT (with a NOT NULL field),
// every other scalar kind nullable, an ARRAY of STRUCTs, an ARRAY of
// STRINGs, a MAP of BIGINTs keyed by STRING and one keyed by INT.
func avroTestTable() []record.TableField {
	scalar := func(name, kind string, nullable bool) record.TableField {
		return record.TableField{Name: name, Type: &record.FieldType{Kind: kind}, Nullable: nullable}
	}
	return []record.TableField{
		scalar("id", "BIGINT", false), scalar("name", "STRING", true), scalar("v", "VARIANT", true),
		scalar("price", "DECIMAL", true), scalar("ts", "TIMESTAMP", true), scalar("ntz", "TIMESTAMP_NTZ", true),
		scalar("i", "INT", true), scalar("small", "SMALLINT", true), scalar("tiny", "TINYINT", true),
		scalar("day", "DATE", true), scalar("ratio", "DOUBLE", true), scalar("f", "FLOAT", true),
		scalar("ok", "BOOLEAN", true), scalar("blob", "BINARY", true),
		{Name: "ship_to", Type: &record.FieldType{Kind: "STRUCT", Fields: []record.TableField{
			scalar("street", "STRING", false), scalar("zip", "INT", true),
		}}},
		{Name: "items", Nullable: true, Type: &record.FieldType{Kind: "ARRAY", Elem: &record.FieldType{Kind: "STRUCT", Fields: []record.TableField{
			scalar("sku", "STRING", false),
		}}}},
		{Name: "tags", Nullable: true, Type: &record.FieldType{Kind: "ARRAY", Elem: &record.FieldType{Kind: "STRING"}}},
		{Name: "attrs", Nullable: true, Type: &record.FieldType{Kind: "MAP", Key: &record.FieldType{Kind: "STRING"}, Value: &record.FieldType{Kind: "BIGINT"}}},
		{Name: "by_day", Nullable: true, Type: &record.FieldType{Kind: "MAP", Key: &record.FieldType{Kind: "INT"}, Value: &record.FieldType{Kind: "BOOLEAN"}}},
	}
}

// rowSchema is a writer schema: a record Row of the given fields (JSON).
func rowSchema(fields ...string) string {
	return `{"type": "record", "name": "Row", "fields": [` + strings.Join(fields, ",") + `]}`
}

// The fields that every schema below needs, the NOT NULL columns.
const (
	avroID     = `{"name": "id", "type": "long"}`
	avroShipTo = `{"name": "ship_to", "type": {"type": "record", "name": "Addr", "fields": [{"name": "street", "type": "string"}]}}`
)

func TestAvroFitsTableAccepts(t *testing.T) {
	table := avroTestTable()
	for what, schema := range map[string]string{
		"every column": rowSchema(
			avroID,
			`{"name": "name", "type": ["null", "string"]}`,
			`{"name": "v", "type": "string"}`,
			`{"name": "price", "type": {"type": "string", "logicalType": "uuid"}}`,
			`{"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]}`,
			`{"name": "ntz", "type": {"type": "long", "logicalType": "local-timestamp-micros"}}`,
			`{"name": "i", "type": "int"}`,
			`{"name": "small", "type": "int"}`,
			`{"name": "tiny", "type": "int"}`,
			`{"name": "day", "type": {"type": "int", "logicalType": "date"}}`,
			`{"name": "ratio", "type": "double"}`,
			`{"name": "f", "type": "float"}`,
			`{"name": "ok", "type": "boolean"}`,
			`{"name": "blob", "type": "bytes"}`,
			`{"name": "ship_to", "type": {"type": "record", "name": "Addr", "fields": [
				{"name": "street", "type": "string"}, {"name": "zip", "type": ["int", "null"]}]}}`,
			`{"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [{"name": "sku", "type": "string"}]}}}`,
			`{"name": "tags", "type": ["null", {"type": "array", "items": "string"}]}`,
			`{"name": "attrs", "type": {"type": "map", "values": "long"}}`,
		),
		"only the NOT NULL columns": rowSchema(avroID, avroShipTo),
		"narrower, enum, fixed": rowSchema(
			`{"name": "id", "type": "int"}`, avroShipTo,
			`{"name": "ratio", "type": "float"}`,
			`{"name": "name", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}`,
			`{"name": "blob", "type": {"type": "fixed", "name": "Hash", "size": 4}}`,
			`{"name": "attrs", "type": {"type": "map", "values": "int"}}`,
		),
	} {
		s, err := parseAvroSchema(schema)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := avroFitsTable(s, table); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// TestAvroFitsTableRecursive: a recursive record fits a table's finite
// nesting, and the walk ends with the table's.
func TestAvroFitsTableRecursive(t *testing.T) {
	table := []record.TableField{
		{Name: "id", Type: &record.FieldType{Kind: "BIGINT"}},
		{Name: "next", Nullable: true, Type: &record.FieldType{Kind: "STRUCT", Fields: []record.TableField{
			{Name: "id", Type: &record.FieldType{Kind: "BIGINT"}},
		}}},
	}
	s, err := parseAvroSchema(`{"type": "record", "name": "Node", "fields": [
		{"name": "id", "type": "long"}, {"name": "next", "type": ["null", "Node"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	// The inner Node has a field next that the inner STRUCT lacks.
	var fe *record.FitError
	if err := avroFitsTable(s, table); !errors.As(err, &fe) || fe.Field != "next.next" {
		t.Errorf("avroFitsTable = %v; want next.next refused", err)
	}
	table[1].Type.Fields = append(table[1].Type.Fields, record.TableField{Name: "next", Nullable: true, Type: &record.FieldType{Kind: "STRUCT"}})
	// Now next.next is a STRUCT without fields, and Node's id is not one.
	if err := avroFitsTable(s, table); !errors.As(err, &fe) || fe.Field != "next.next.id" {
		t.Errorf("avroFitsTable = %v; want next.next.id refused", err)
	}
}

func TestAvroFitsTableRefuses(t *testing.T) {
	table := avroTestTable()
	for _, tc := range []struct {
		what   string
		schema string
		field  string
		reason string // a part of the reason
	}{
		{"not a record", `"string"`, "", "the writer schema is string, not a record"},
		{"a field that names no column", rowSchema(avroID, avroShipTo, `{"name": "nope", "type": "string"}`),
			"nope", `no column is named "nope"`},
		{"a NOT NULL column without a field", rowSchema(avroShipTo), "id", "the column is NOT NULL and record Row has no field for it"},
		{"a NOT NULL STRUCT field without a field", rowSchema(avroID,
			`{"name": "ship_to", "type": {"type": "record", "name": "Addr", "fields": [{"name": "zip", "type": "int"}]}}`),
			"ship_to.street", "NOT NULL"},
		{"a field that names no STRUCT field", rowSchema(avroID,
			`{"name": "ship_to", "type": {"type": "record", "name": "Addr", "fields": [{"name": "street", "type": "string"}, {"name": "city", "type": "string"}]}}`),
			"ship_to.city", `no column is named "city"`},
		{"a nullable union for a NOT NULL column", rowSchema(`{"name": "id", "type": ["null", "long"]}`, avroShipTo),
			"id", "the column is NOT NULL and the field's union admits null"},
		{"a nullable union for a NOT NULL STRUCT field", rowSchema(avroID,
			`{"name": "ship_to", "type": {"type": "record", "name": "Addr", "fields": [{"name": "street", "type": ["null", "string"]}]}}`),
			"ship_to.street", "union admits null"},
		{"a union of two types", rowSchema(avroID, avroShipTo, `{"name": "name", "type": ["string", "long"]}`),
			"name", `a union other than ["null", T]`},
		{"a union of three types", rowSchema(avroID, avroShipTo, `{"name": "name", "type": ["null", "string", "long"]}`),
			"name", `a union other than ["null", T]`},
		{"string for BIGINT", rowSchema(`{"name": "id", "type": "string"}`, avroShipTo),
			"id", "the field is string and the column BIGINT, which takes only long, int"},
		{"int for TIMESTAMP", rowSchema(avroID, avroShipTo, `{"name": "ts", "type": "int"}`),
			"ts", "the field is int and the column TIMESTAMP, which takes only long"},
		{"long for DATE", rowSchema(avroID, avroShipTo, `{"name": "day", "type": {"type": "long", "logicalType": "timestamp-millis"}}`),
			"day", "the field is long (timestamp-millis) and the column DATE"},
		{"long for INT", rowSchema(avroID, avroShipTo, `{"name": "i", "type": "long"}`), "i", "the field is long and the column INT"},
		{"double for FLOAT", rowSchema(avroID, avroShipTo, `{"name": "f", "type": "double"}`), "f", "the field is double and the column FLOAT"},
		{"bytes decimal for DECIMAL", rowSchema(avroID, avroShipTo,
			`{"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}`),
			"price", "the field is bytes (decimal) and the column DECIMAL, which takes only string"},
		{"string for BINARY", rowSchema(avroID, avroShipTo, `{"name": "blob", "type": "string"}`), "blob", "the column BINARY"},
		{"int for BOOLEAN", rowSchema(avroID, avroShipTo, `{"name": "ok", "type": "int"}`), "ok", "the column BOOLEAN"},
		{"an enum for VARIANT", rowSchema(avroID, avroShipTo, `{"name": "v", "type": {"type": "enum", "name": "E", "symbols": ["A"]}}`),
			"v", "the field is enum and the column VARIANT"},
		{"a string for a STRUCT", rowSchema(avroID, `{"name": "ship_to", "type": "string"}`),
			"ship_to", "the column is a STRUCT and needs a record, not string"},
		{"a record for a STRING", rowSchema(avroID, avroShipTo,
			`{"name": "name", "type": {"type": "record", "name": "N", "fields": []}}`), "name", "the field is record and the column STRING"},
		{"a string for an ARRAY", rowSchema(avroID, avroShipTo, `{"name": "tags", "type": "string"}`),
			"tags", "the column is an ARRAY and needs an array, not string"},
		{"an array of records for an ARRAY of STRINGs", rowSchema(avroID, avroShipTo,
			`{"name": "tags", "type": {"type": "array", "items": {"type": "record", "name": "Tag", "fields": []}}}`),
			"tags[]", "the field is record and the column STRING"},
		{"an array of strings for an ARRAY of STRUCTs", rowSchema(avroID, avroShipTo,
			`{"name": "items", "type": {"type": "array", "items": "string"}}`), "items[]", "the column is a STRUCT and needs a record, not string"},
		{"an ARRAY's STRUCT without its NOT NULL field", rowSchema(avroID, avroShipTo,
			`{"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": []}}}`), "items[].sku", "NOT NULL"},
		{"nullable elements", rowSchema(avroID, avroShipTo, `{"name": "tags", "type": {"type": "array", "items": ["null", "string"]}}`),
			"tags[]", "the column is STRING and takes no null"},
		{"an array for a MAP", rowSchema(avroID, avroShipTo, `{"name": "attrs", "type": {"type": "array", "items": "long"}}`),
			"attrs", "the column is a MAP and needs a map, not array"},
		{"a map of strings for a MAP of BIGINTs", rowSchema(avroID, avroShipTo, `{"name": "attrs", "type": {"type": "map", "values": "string"}}`),
			"attrs{value}", "the field is string and the column BIGINT"},
		{"nullable values", rowSchema(avroID, avroShipTo, `{"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}}`),
			"attrs{value}", "takes no null"},
		{"a map for a MAP keyed by INT", rowSchema(avroID, avroShipTo, `{"name": "by_day", "type": {"type": "map", "values": "boolean"}}`),
			"by_day{key}", "an Avro map's keys are strings, and the column's are INT"},
	} {
		s, err := parseAvroSchema(tc.schema)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		err = avroFitsTable(s, table)
		var fe *record.FitError
		if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason) {
			t.Errorf("%s: %v; want a *record.FitError at %q with %q", tc.what, err, tc.field, tc.reason)
		}
	}
}

// TestAvroFitsTableFromChecker: the columns as record.TableChecker parses
// them from a table's schema, against a writer schema.
func TestAvroFitsTableFromChecker(t *testing.T) {
	c, err := record.NewTableChecker(&record.TableSchema{Name: "events", Columns: []record.Column{
		{Name: "id", TypeName: "LONG"},
		{Name: "labels", TypeName: "MAP", Position: 1, Nullable: true, TypeJSON: `{"type":"map","keyType":"string","valueType":"string"}`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for schema, field := range map[string]string{
		rowSchema(avroID, `{"name": "labels", "type": ["null", {"type": "map", "values": "string"}]}`): "",
		rowSchema(`{"name": "labels", "type": {"type": "map", "values": "string"}}`):                   "id",
	} {
		s, err := parseAvroSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		err = avroFitsTable(s, c.Fields())
		var fe *record.FitError
		if (field == "") != (err == nil) || (field != "" && (!errors.As(err, &fe) || fe.Field != field)) {
			t.Errorf("%s: %v; want refused at %q", schema, err, field)
		}
	}
}
