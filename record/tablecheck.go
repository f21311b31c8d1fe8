package record

// TableChecker: what a Unity Catalog table accepts, parsed once from its
// columns, for a server (or a client) that refuses records and streams
// that do not fit the table, as the service does. The proto checks are in
// tablefit.go and tablefit_record.go.

import (
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TableChecker checks records and stream schemas against one table's
// columns: JSON records (CheckJSON), the message of a proto stream
// (ProtoFit) and its records (ProtoFit.Check); Fields gives the parsed
// columns to checks of other formats. It is immutable and safe for
// concurrent use.
type TableChecker struct {
	schema TableSchema
	fields []ucField                      // the columns, ordered by Position
	msg    protoreflect.MessageDescriptor // the table's message (DescriptorFromColumns)
}

// NewTableChecker parses t's columns once. A table whose records have no
// proto mapping, for any reason DescriptorFromColumns gives (a column of
// a type without a mapping, an ARRAY of ARRAYs, two columns whose proto
// names collide, ...), is a *SchemaError, as is a nil t: the JSON check
// needs that mapping, and a table the official SDKs cannot describe is
// not one this package claims to check.
func NewTableChecker(t *TableSchema) (*TableChecker, error) {
	if t == nil {
		return nil, &SchemaError{Reason: "no table schema"}
	}
	if len(t.Columns) == 0 {
		return nil, &SchemaError{Reason: "no columns"}
	}
	fields, err := tableFields(t.Columns)
	if err != nil {
		return nil, err
	}
	dp, err := builder{}.buildMessage(t.messageName(), fields, "")
	if err != nil {
		return nil, err
	}
	raw, err := proto.Marshal(dp)
	if err != nil {
		return nil, &SchemaError{Reason: "the table's descriptor does not encode", Err: err}
	}
	md, err := MessageDescriptor(raw)
	if err != nil {
		return nil, &SchemaError{Reason: "the table's descriptor does not build", Err: err}
	}
	c := &TableChecker{schema: *t, fields: fields, msg: md}
	c.schema.Columns = slices.Clone(t.Columns)
	return c, nil
}

// Schema returns a copy of the schema the checker was built from (a copy,
// so that no caller can change what the checker checks).
func (c *TableChecker) Schema() *TableSchema {
	s := c.schema
	s.Columns = slices.Clone(c.schema.Columns)
	return &s
}

// Fields returns the table's columns, ordered by Position, with their
// parsed types: a new copy each call, for checks of formats this package
// does not know (the reference server's Avro check).
func (c *TableChecker) Fields() []TableField { return exportFields(c.fields) }

// CheckJSON returns nil if the table accepts rec as a JSON record: one
// JSON object whose fields are columns, each named by the column's name
// or by its proto name (docs/protocol.md §11: "unit price" or
// "unit_price"), with a value of the column's type as protobuf's JSON
// mapping reads it (JSONToProto), and every NOT NULL column given and not
// null. Otherwise it returns JSONToProto's *ConvertError, which names the
// field and its ConvertFault. The record is converted, exactly as a
// client streaming JSON to proto converts it, and the result dropped: one
// rule for both, at the price of an encode.
func (c *TableChecker) CheckJSON(rec []byte) error {
	_, err := JSONToProto(c.msg, rec)
	return err
}

// FitError is a stream's schema, or one of its records, that does not fit
// the table: Field is the path of the field at fault as the stream names
// it ("addr.zip"; in a schema "items[].qty", "attrs{key}",
// "attrs{value}.x"; in a record "items[2].qty", `attrs["k"].x`), or of
// the column that has no field, empty for the schema as a whole; Reason
// says why.
type FitError struct {
	Field  string
	Reason string
}

// Error names the field, if any, and the reason.
func (e *FitError) Error() string {
	if e.Field == "" {
		return "does not fit the table: " + e.Reason
	}
	return "does not fit the table: field " + strconv.Quote(e.Field) + ": " + e.Reason
}

// fitErrorf is a *FitError at path.
func fitErrorf(path, format string, args ...any) *FitError {
	return &FitError{Field: path, Reason: fmt.Sprintf(format, args...)}
}
