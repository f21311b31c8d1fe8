package record

// Unity Catalog table schemas as the REST API returns them
// (GET /api/2.1/unity-catalog/tables/{full_name}): the columns, their
// parsing, and the errors a schema that cannot become a proto descriptor
// gets.

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/descriptorpb"
)

// Column is one column of a Unity Catalog table, with the fields the
// Unity Catalog tables API returns for it. TypeName is the column's type
// in upper case ("STRING", "BIGINT", "STRUCT", ...); TypeJSON is its
// Spark StructField as JSON, which DescriptorFromColumns reads for STRUCT,
// ARRAY and MAP columns; TypeText is the SQL spelling ("array<int>"),
// kept for messages only. Position orders the columns (from 0).
//
// Nullable is true when the column accepts NULL. The API leaves it out
// for a nullable column, and decoding a Column from JSON (UnmarshalJSON)
// then sets it true; a Column written as a Go literal without it is NOT
// NULL.
type Column struct {
	Name     string `json:"name"`
	TypeName string `json:"type_name"`
	TypeText string `json:"type_text,omitempty"`
	TypeJSON string `json:"type_json,omitempty"`
	Position int    `json:"position"`
	Nullable bool   `json:"nullable"`
}

// UnmarshalJSON decodes a column of the Unity Catalog API: a column with
// no "nullable" field is nullable, as the API means it.
func (c *Column) UnmarshalJSON(b []byte) error {
	type plain Column // without this method
	v := struct {
		plain
		Nullable *bool `json:"nullable"`
	}{}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Column(v.plain)
	c.Nullable = v.Nullable == nil || *v.Nullable
	return nil
}

// TableSchema is the part of the Unity Catalog tables API's answer that
// describes a table: its names and its columns.
type TableSchema struct {
	Name        string   `json:"name"`
	CatalogName string   `json:"catalog_name,omitempty"`
	SchemaName  string   `json:"schema_name,omitempty"`
	FullName    string   `json:"full_name,omitempty"`
	Columns     []Column `json:"columns"`
}

// ParseTableSchema decodes the Unity Catalog tables API's answer for one
// table (other fields of the answer are ignored). An answer that is not a
// JSON object, or has no columns, is a *SchemaError.
func ParseTableSchema(b []byte) (*TableSchema, error) {
	var t TableSchema
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, &SchemaError{Fault: SchemaFaultTable, Reason: "the table's answer is not a table object", Err: err}
	}
	if len(t.Columns) == 0 {
		return nil, &SchemaError{Fault: SchemaFaultTable, Reason: "the table has no columns"}
	}
	return &t, nil
}

// Descriptor returns the proto descriptor of the table's records
// (DescriptorFromColumns), its message named after the table (MessageName
// of Name, or of the last part of FullName when Name is empty).
func (t *TableSchema) Descriptor() (*descriptorpb.DescriptorProto, error) {
	return DescriptorFromColumns(t.messageName(), t.Columns)
}

// messageName is the name of the table's message: MessageName of Name, or
// of the last part of FullName when Name is empty.
func (t *TableSchema) messageName() string {
	name := t.Name
	if name == "" {
		name = t.FullName[strings.LastIndexByte(t.FullName, '.')+1:]
	}
	return MessageName(name)
}

// SchemaError is a table schema that cannot become a proto descriptor: a
// column of a type without a mapping, a type_json that does not parse, two
// columns whose proto names collide. Column names the column (a nested
// field as column.field, an array's element as column[], a map's key or
// value as column{key} or column{value}), empty for the table itself;
// Fault says what kind of problem it is.
type SchemaError struct {
	Column string
	Fault  SchemaFault
	Reason string
	Err    error
}

// Error names the column and the reason.
func (e *SchemaError) Error() string {
	var b strings.Builder
	b.WriteString("table schema")
	if e.Column != "" {
		fmt.Fprintf(&b, ": column %q", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error, if any.
func (e *SchemaError) Unwrap() error { return e.Err }
