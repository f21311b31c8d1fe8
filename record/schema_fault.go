package record

// SchemaFault: what kind of problem a *SchemaError is, so that a caller
// can tell a type it cannot write from a name it could change without
// reading the error's text.

import "strconv"

// SchemaFault is what is wrong with a table schema that has no proto
// descriptor.
type SchemaFault int

// The faults of a *SchemaError.
const (
	// SchemaFaultTable: the table as a whole, not one column's type: an
	// answer that is no table, no columns, a message name that is not a
	// proto identifier, field numbers protobuf does not allow.
	SchemaFaultTable SchemaFault = iota + 1
	// SchemaFaultName: a name that cannot be a proto name: empty, the same
	// proto name as another in its message, a MAP whose entry message
	// cannot be named.
	SchemaFaultName
	// SchemaFaultType: a type without a proto mapping (INTERVAL, say),
	// as a column's type_name or inside its type_json.
	SchemaFaultType
	// SchemaFaultTypeJSON: a STRUCT, ARRAY or MAP column's type_json
	// missing, not parsing, nested too deep, or of another type than
	// type_name says.
	SchemaFaultTypeJSON
	// SchemaFaultNesting: a nesting proto cannot hold: an ARRAY of ARRAYs
	// or MAPs, a MAP keyed by DOUBLE, FLOAT, BINARY or a STRUCT, a MAP of
	// ARRAYs or MAPs.
	SchemaFaultNesting
)

var schemaFaultNames = map[SchemaFault]string{
	SchemaFaultTable: "table", SchemaFaultName: "name", SchemaFaultType: "type",
	SchemaFaultTypeJSON: "type_json", SchemaFaultNesting: "nesting",
}

// String names the fault.
func (f SchemaFault) String() string { return enumName(schemaFaultNames, f, "SchemaFault") }

// enumName names v as names does, or as typeName(v) for a value it does
// not name: the String of SchemaFault and ConvertFault.
func enumName[T ~int](names map[T]string, v T, typeName string) string {
	if n, ok := names[v]; ok {
		return n
	}
	return typeName + "(" + strconv.Itoa(int(v)) + ")"
}
