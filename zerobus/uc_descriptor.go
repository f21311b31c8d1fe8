package zerobus

// The official SDK's descriptors of Unity Catalog tables, built by
// zbstream's record.DescriptorFromColumnsWith with the official Go SDK's
// field numbers and message names; this file adds the official SDK's
// input rules (names, type names, columns left out) and error kinds.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream/record"
)

// DescriptorFromUcColumns returns the proto2 message, named messageName,
// of a table of these columns, as the official SDK builds it: one field a
// column, named as the column and numbered Position+1; STRING, VARIANT
// and DECIMAL as string, BIGINT (LONG), TIMESTAMP and TIMESTAMP_NTZ as
// int64, INT (INTEGER), SMALLINT (SHORT), TINYINT (BYTE) and DATE as
// int32, BOOLEAN (BOOL), DOUBLE, FLOAT and BINARY as bool, double, float
// and bytes; a STRUCT as a message nested in the one holding the field
// (its fields numbered 1, 2, ... in order), an ARRAY as a repeated field,
// a MAP as a proto map. A NOT NULL column is a required field, a nullable
// one optional; ARRAY and MAP fields are repeated. STRUCT, ARRAY and MAP
// columns are read from TypeJson. Columns of a negative position are left
// out.
//
// A nested message is named after the path of its field in PascalCase: a
// column ship_to's struct is ShipTo, a field geo of it ShipToGeo, an
// ARRAY items' struct element ItemsElement, a MAP's struct value
// ShipToAttrsValue; a name already declared in the message gets 2, 3, ...
// after it. A MAP's entry message is named as protobuf requires
// (AttrsEntry for a map field attrs), which for a MAP that is not a
// column is not the official name (ShipToAttrsEntry): protobuf refuses
// that name, and so does any server that checks the descriptor.
//
// A schema without a descriptor is a *SchemaError: a name that is empty,
// starts with a digit, holds a character other than an ASCII letter, digit
// or '_', or is a proto keyword (InvalidFieldName); a type_name without a
// mapping (UnsupportedType; type names are upper case, as the tables API
// gives them); a STRUCT, ARRAY or MAP column without TypeJson
// (MissingTypeJson) or whose TypeJson does not parse, has a type without a
// mapping or is of another type than TypeName (InvalidTypeJson); an ARRAY
// of ARRAYs or MAPs, a MAP keyed by DOUBLE, FLOAT, BINARY or a STRUCT, a
// MAP of ARRAYs or MAPs (Invalid). Where the official SDK returns a
// descriptor that no protobuf implementation accepts, this is an Invalid
// SchemaError too: no columns, a messageName that is not a proto
// identifier, two columns of one name or one position, a position whose
// number protobuf does not allow (such as 18999: 19000 to 19999 are
// protobuf's).
func DescriptorFromUcColumns(columns []UcColumn, messageName string) (*descriptorpb.DescriptorProto, error) {
	var kept []UcColumn
	for _, c := range columns {
		if c.Position >= 0 {
			kept = append(kept, c)
		}
	}
	slices.SortStableFunc(kept, func(a, b UcColumn) int { return cmp.Compare(a.Position, b.Position) })
	cols := make([]record.Column, 0, len(kept))
	for _, c := range kept {
		if err := checkFieldName(c.Name); err != nil {
			return nil, err
		}
		typeName := c.TypeName
		switch {
		case isComplexType(typeName) && c.TypeJson == "":
			return nil, &SchemaError{Kind: kindMissingTypeJSON, Field: c.Name, Message: fmt.Sprintf("missing type_json for complex column '%s'", c.Name)}
		case typeName != strings.ToUpper(strings.TrimSpace(typeName)):
			// record reads type names in any case; the official SDK only
			// in the tables API's.
			return nil, unsupportedType(c)
		case typeName == "BOOL":
			typeName = "BOOLEAN" // an alias the official SDK takes too
		}
		cols = append(cols, record.Column{
			Name: c.Name, TypeName: typeName, TypeText: c.TypeText, TypeJSON: c.TypeJson,
			Position: int(c.Position), Nullable: c.Nullable,
		})
	}
	// The official Go SDK's field numbers (a column's position + 1) and
	// nested message names (after their path).
	dp, err := record.DescriptorFromColumnsWith(messageName, cols, record.DescriptorOptions{NumberByPosition: true, PathNames: true})
	if err != nil {
		return nil, fromRecordError(err, kept)
	}
	if err := checkNestedNames(dp); err != nil {
		return nil, err
	}
	return dp, nil
}

// DescriptorFromUcSchema returns DescriptorFromUcColumns of the table's
// columns, its message named after the schema and the table as the
// official SDK names it: the runs of ASCII letters and digits of
// SchemaName + "_" + Name, each starting in upper case, with a leading "M"
// if the result does not start with a letter (sales.orders: SalesOrders).
// A nil schema is an Invalid *SchemaError.
func DescriptorFromUcSchema(schema *UcTableSchema) (*descriptorpb.DescriptorProto, error) {
	if schema == nil {
		return nil, &SchemaError{Kind: kindInvalid, Message: "the schema is nil"}
	}
	return DescriptorFromUcColumns(schema.Columns, record.PascalName(schema.SchemaName+"_"+schema.Name))
}

// MessageDescriptorFromUcColumns returns the message of
// DescriptorFromUcColumns as a protoreflect.MessageDescriptor, for
// dynamicpb.NewMessage, and serialized, for
// TableProperties.DescriptorProto.
//
// The MessageDescriptor is the proto2 message the bytes describe, as a
// server that decodes records with them reads it: a NOT NULL column is a
// required field (proto.Marshal refuses a message without it) and a
// nullable one has presence (a zero it is set to is sent, and read as
// zero, not NULL). The official SDK's is a proto3 copy, whose zero values
// are left out of the record, and whose making fails for a STRUCT with a
// NOT NULL field.
func MessageDescriptorFromUcColumns(columns []UcColumn, messageName string) (protoreflect.MessageDescriptor, []byte, error) {
	return messageDescriptorOf(DescriptorFromUcColumns(columns, messageName))
}

// MessageDescriptorFromUcSchema is MessageDescriptorFromUcColumns of the
// table's columns, its message named as DescriptorFromUcSchema names it.
func MessageDescriptorFromUcSchema(schema *UcTableSchema) (protoreflect.MessageDescriptor, []byte, error) {
	return messageDescriptorOf(DescriptorFromUcSchema(schema))
}

// messageDescriptorOf serializes dp and builds its message as CreateStream
// does.
func messageDescriptorOf(dp *descriptorpb.DescriptorProto, err error) (protoreflect.MessageDescriptor, []byte, error) {
	if err != nil {
		return nil, nil, err
	}
	b, err := proto.Marshal(dp)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to marshal descriptor: %w", err)
	}
	m, err := messageOf(b)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to build file descriptor: %w", err)
	}
	return m.ProtoReflect().Descriptor(), b, nil
}

func isComplexType(typeName string) bool {
	return typeName == "STRUCT" || typeName == "ARRAY" || typeName == "MAP"
}

func unsupportedType(c UcColumn) *SchemaError {
	return &SchemaError{Kind: kindUnsupportedType, Field: c.Name, Message: fmt.Sprintf("unsupported Databricks type '%s'", c.TypeName)}
}

// fromRecordError turns record's *SchemaError into the official kind:
// record names the column (or a nested field by its path, column.field,
// column[] or column{value}), and says which kind of problem it is.
func fromRecordError(err error, columns []UcColumn) error {
	var se *record.SchemaError
	if !errors.As(err, &se) {
		return err
	}
	column := se.Column // a column's name holds none of . [ {
	if j := strings.IndexAny(column, ".[{"); j >= 0 {
		column = column[:j]
	}
	i := slices.IndexFunc(columns, func(c UcColumn) bool { return c.Name == column })
	reason := se.Reason
	if se.Err != nil {
		reason += ": " + se.Err.Error()
	}
	switch {
	case se.Fault == record.SchemaFaultName && strings.HasSuffix(se.Column, "."):
		return checkFieldName("") // a struct's field without a name
	case se.Fault == record.SchemaFaultName:
		return &SchemaError{Kind: kindInvalidFieldName, Field: se.Column, Message: fmt.Sprintf("invalid field name '%s': %s", se.Column, reason)}
	case se.Fault == record.SchemaFaultType && i >= 0 && !isComplexType(columns[i].TypeName):
		return unsupportedType(columns[i])
	case se.Fault == record.SchemaFaultType || se.Fault == record.SchemaFaultTypeJSON:
		return &SchemaError{Kind: kindInvalidTypeJSON, Field: column, Message: fmt.Sprintf("failed to parse type_json for column '%s': %s", column, reason)}
	case se.Column != "":
		return &SchemaError{Kind: kindInvalid, Field: se.Column, Message: fmt.Sprintf("field '%s': %s", se.Column, reason)}
	default:
		return &SchemaError{Kind: kindInvalid, Message: reason}
	}
}
