package zerobus

// The official SDK's Unity Catalog schema types: a table's columns as the
// tables API returns them, and the error of a schema without a descriptor.
// The descriptors are built in uc_descriptor.go.

import (
	"encoding/json"
	"math"
	"reflect"

	"github.com/zbstream/zbstream/record"
)

// UcColumn is one column of a Unity Catalog table, its fields those of the
// tables API's answer (GET /api/2.1/unity-catalog/tables/{full_name}):
// TypeName is the column's type in upper case ("BIGINT", "STRUCT"),
// TypeJson its Spark type as JSON (needed for STRUCT, ARRAY and MAP),
// TypeText its SQL spelling (not read), Position its place in the table
// from 0 (its field's number is Position+1).
//
// Nullable is true for a column that takes NULL. The API leaves it out
// for such a column, so decoding a UcColumn from JSON sets it true when
// "nullable" is absent; a UcColumn literal without it is NOT NULL. It has
// no JSON tag, as in the official SDK, so json.Marshal writes it as
// "Nullable" (which decoding reads too: key matching ignores case).
type UcColumn struct {
	Name     string `json:"name"`
	TypeName string `json:"type_name"`
	TypeText string `json:"type_text"`
	TypeJson string `json:"type_json"`
	Nullable bool
	Position int32 `json:"position"`
}

// UnmarshalJSON decodes a column of the tables API's answer: a column
// without "nullable" is nullable. The rule is record.Column's, which does
// the decoding.
func (c *UcColumn) UnmarshalJSON(data []byte) error {
	var rc record.Column
	if err := json.Unmarshal(data, &rc); err != nil {
		return err
	}
	if rc.Position < math.MinInt32 || rc.Position > math.MaxInt32 {
		return &json.UnmarshalTypeError{Value: "number", Type: reflect.TypeFor[int32](), Field: "position"}
	}
	*c = UcColumn{
		Name: rc.Name, TypeName: rc.TypeName, TypeText: rc.TypeText, TypeJson: rc.TypeJSON,
		Nullable: rc.Nullable, Position: int32(rc.Position),
	}
	return nil
}

// UcTableSchema is a Unity Catalog table as the tables API returns it:
// decode the API's answer into one (other fields are ignored) and pass it
// to DescriptorFromUcSchema. The official SDK has no call that fetches
// it; zbstream's Client.TableDescriptor (ZerobusSdk.Client) does.
type UcTableSchema struct {
	Name        string     `json:"name"`
	CatalogName string     `json:"catalog_name"`
	SchemaName  string     `json:"schema_name"`
	Columns     []UcColumn `json:"columns"`
}

// The kinds of a SchemaError, as the official SDK spells them.
const (
	kindInvalidFieldName = "InvalidFieldName" // a name that is not a proto field name
	kindUnsupportedType  = "UnsupportedType"  // a type_name without a proto mapping
	kindMissingTypeJSON  = "MissingTypeJson"  // a STRUCT, ARRAY or MAP column without type_json
	kindInvalidTypeJSON  = "InvalidTypeJson"  // a type_json that does not parse or has a type without a mapping
	kindInvalid          = "Invalid"          // anything else: a nesting proto cannot hold, the schema as a whole
)

// SchemaError is a Unity Catalog schema that has no proto descriptor, as
// in the official SDK. Kind is one of "InvalidFieldName",
// "UnsupportedType", "MissingTypeJson", "InvalidTypeJson" and "Invalid";
// Field names the column or field at fault (a nested field by its path,
// column.field, where zbstream's checks find it); Message says what is
// wrong.
type SchemaError struct {
	Kind    string
	Field   string
	Message string
}

// Error returns Message, as the official SDK does.
func (e *SchemaError) Error() string { return e.Message }
