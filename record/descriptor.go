package record

// DescriptorFromColumns: a table's columns as one proto2 DescriptorProto,
// the type mapping of the official Zerobus SDKs (docs/protocol.md §11),
// with names made valid and collisions refused.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// DefaultMessageName names the message of DescriptorFromColumns when the
// caller has no table name to give it.
const DefaultMessageName = "Record"

// The reserved field numbers of protobuf, which a field cannot have.
const (
	firstReservedNumber = 19000
	lastReservedNumber  = 19999
	maxFieldNumber      = 1<<29 - 1
)

// scalarTypes maps a scalar kind to its proto field type.
var scalarTypes = map[ucKind]descriptorpb.FieldDescriptorProto_Type{
	kindString: descriptorpb.FieldDescriptorProto_TYPE_STRING, kindVariant: descriptorpb.FieldDescriptorProto_TYPE_STRING,
	kindDecimal: descriptorpb.FieldDescriptorProto_TYPE_STRING,
	kindLong:    descriptorpb.FieldDescriptorProto_TYPE_INT64, kindTimestamp: descriptorpb.FieldDescriptorProto_TYPE_INT64,
	kindTimestampNTZ: descriptorpb.FieldDescriptorProto_TYPE_INT64,
	kindInt:          descriptorpb.FieldDescriptorProto_TYPE_INT32, kindShort: descriptorpb.FieldDescriptorProto_TYPE_INT32,
	kindByte: descriptorpb.FieldDescriptorProto_TYPE_INT32, kindDate: descriptorpb.FieldDescriptorProto_TYPE_INT32,
	kindDouble: descriptorpb.FieldDescriptorProto_TYPE_DOUBLE, kindFloat: descriptorpb.FieldDescriptorProto_TYPE_FLOAT,
	kindBoolean: descriptorpb.FieldDescriptorProto_TYPE_BOOL, kindBinary: descriptorpb.FieldDescriptorProto_TYPE_BYTES,
}

// DescriptorFromColumns returns the proto2 message, named name, whose
// records a table of these columns takes, as the official Zerobus SDKs map
// Unity Catalog types (docs/protocol.md §11): STRING, VARIANT and DECIMAL
// as string; BIGINT, TIMESTAMP and TIMESTAMP_NTZ as int64 (microseconds
// since the epoch); INT, SMALLINT, TINYINT and DATE as int32 (days since
// the epoch); DOUBLE, FLOAT, BOOLEAN, BINARY as double, float, bool,
// bytes; a STRUCT as a message nested in the one holding the field, an
// ARRAY as a repeated field, a MAP as a proto map.
//
// Columns are ordered by Position (ties keep their order) and numbered
// from 1 in that order (a struct's fields in theirs), skipping protobuf's
// reserved 19000-19999. A NOT NULL column is a required field, so that a
// record without it is refused; a nullable one is optional; arrays and
// maps are repeated, whatever their nullability.
//
// A column name that is not a proto identifier is made one: every
// character but an ASCII letter, digit or '_' becomes '_', and a name that
// starts with a digit gets a leading '_'. The field's json_name keeps the
// column's name, so JSONToProto (and protojson) take the column's name. A
// nested message is named after its field in CamelCase ("ship_to":
// ShipTo), a map of structs' value message with "Value" after it, a map's
// entry as protobuf requires ("ShipToEntry"). Two names that end up the
// same in one message (columns "a b" and "a_b", say) are a *SchemaError,
// as is a MAP column whose name, underscores dropped, starts with a digit
// (its entry message cannot be named), a type without a mapping, an ARRAY
// of ARRAYs or MAPs, a MAP keyed by DOUBLE, FLOAT or BINARY, or valued by
// an ARRAY or a MAP. DescriptorFromColumnsWith numbers and names them the
// official Go SDK's way instead.
func DescriptorFromColumns(name string, columns []Column) (*descriptorpb.DescriptorProto, error) {
	return DescriptorFromColumnsWith(name, columns, DescriptorOptions{})
}

// tableFields parses the types of columns, ordered by Position (ties keep
// their order): the fields of the table's message.
func tableFields(columns []Column) ([]ucField, error) {
	sorted := slices.Clone(columns)
	slices.SortStableFunc(sorted, func(a, b Column) int { return cmp.Compare(a.Position, b.Position) })
	fields := make([]ucField, len(sorted))
	for i, c := range sorted {
		t, err := columnType(c)
		if err != nil {
			return nil, err
		}
		fields[i] = ucField{name: c.Name, typ: t, nullable: c.Nullable, pos: c.Position}
	}
	return fields, nil
}

// MessageName turns a table name into a message name: the characters a
// proto identifier cannot hold become '_', and one that does not start
// with a letter gets a leading "T".
func MessageName(table string) string {
	n := sanitize(table)
	if n == "" || !isLetter(n[0]) {
		n = "T" + n
	}
	return n
}

// scope holds the names declared in one message, fields and nested types
// alike (they share the message's scope), and what declared each.
type scope map[string]string

func (s scope) claim(name, by, path string) error {
	if prev, ok := s[name]; ok {
		return &SchemaError{Column: path, Fault: SchemaFaultName, Reason: fmt.Sprintf("its proto name %q is also that of %s", name, prev)}
	}
	s[name] = by
	return nil
}

// site is where a field is declared: its message and that message's
// names, whether that is the table's message, the field's proto name and
// its column's path. The messages of the field's type are named after it
// and declared beside it.
type site struct {
	msg   *descriptorpb.DescriptorProto
	names scope
	top   bool
	pname string
	path  string
}

// buildMessage builds the message of a table's columns or a struct's
// fields. prefix is the path of the struct ("" for the table).
func (b builder) buildMessage(name string, fields []ucField, prefix string) (*descriptorpb.DescriptorProto, error) {
	msg := &descriptorpb.DescriptorProto{Name: proto.String(name)}
	names := scope{}
	number := int32(0)
	for _, f := range fields {
		path := prefix + f.name
		pname := protoName(f.name)
		if pname == "" {
			return nil, &SchemaError{Column: path, Fault: SchemaFaultName, Reason: "a column needs a name"}
		}
		if err := names.claim(pname, fmt.Sprintf("column %q", path), path); err != nil {
			return nil, err
		}
		var err error
		if number, err = b.fieldNumber(number, f, prefix == "", path); err != nil {
			return nil, err
		}
		fd := &descriptorpb.FieldDescriptorProto{
			Name: proto.String(pname), JsonName: proto.String(f.name), Number: proto.Int32(number),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}
		if !f.nullable {
			fd.Label = descriptorpb.FieldDescriptorProto_LABEL_REQUIRED.Enum()
		}
		at := site{msg: msg, names: names, top: prefix == "", pname: pname, path: path}
		t, role := f.typ, roleStruct
		switch t.kind {
		case kindArray:
			fd.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
			if k := t.elem.kind; k == kindArray || k == kindMap {
				return nil, &SchemaError{Column: path, Fault: SchemaFaultNesting, Reason: "an ARRAY of ARRAYs or MAPs has no proto mapping"}
			}
			t, role = t.elem, roleElement
		case kindMap:
			fd.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
			entry, err := b.mapEntry(at, t)
			if err != nil {
				return nil, err
			}
			fd.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
			fd.TypeName = proto.String(entry)
			msg.Field = append(msg.Field, fd)
			continue
		}
		if err := b.setType(at, fd, t, role, path); err != nil {
			return nil, err
		}
		msg.Field = append(msg.Field, fd)
	}
	return msg, nil
}

// setType gives fd the type t: a scalar, or a struct, whose message (in
// the role given) is nested in the message of at. path names fd's value.
func (b builder) setType(at site, fd *descriptorpb.FieldDescriptorProto, t *ucType, role structRole, path string) error {
	if st, ok := scalarTypes[t.kind]; ok {
		fd.Type = st.Enum()
		return nil
	}
	if t.kind != kindStruct {
		return &SchemaError{Column: path, Fault: SchemaFaultNesting, Reason: "this nesting has no proto mapping"}
	}
	typeName := b.structName(at, role)
	if err := at.names.claim(typeName, fmt.Sprintf("the message of column %q", path), path); err != nil {
		return err
	}
	nested, err := b.buildMessage(typeName, t.fields, path+".")
	if err != nil {
		return err
	}
	at.msg.NestedType = append(at.msg.NestedType, nested)
	fd.Type = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	fd.TypeName = proto.String(typeName)
	return nil
}

// mapEntry declares, in the message of at, the entry message of its map
// field (and its value's message, for a map of structs) and returns the
// entry's name.
func (b builder) mapEntry(at site, t *ucType) (string, error) {
	if _, ok := scalarTypes[t.key.kind]; !ok || t.key.kind == kindDouble || t.key.kind == kindFloat || t.key.kind == kindBinary {
		return "", &SchemaError{Column: at.path, Fault: SchemaFaultNesting, Reason: "a MAP's key must be a string, an integer, a boolean, a DECIMAL, a DATE or a TIMESTAMP"}
	}
	if k := t.value.kind; k == kindArray || k == kindMap {
		return "", &SchemaError{Column: at.path, Fault: SchemaFaultNesting, Reason: "a MAP of ARRAYs or MAPs has no proto mapping"}
	}
	entryName := camelCase(at.pname) + "Entry" // as protobuf requires, whatever the options
	if !isLetter(entryName[0]) {
		return "", &SchemaError{Column: at.path, Fault: SchemaFaultName, Reason: fmt.Sprintf("a MAP column's entry message would be named %q, not a proto identifier (a name whose first character other than '_' is a digit)", entryName)}
	}
	if err := at.names.claim(entryName, fmt.Sprintf("the map entry of column %q", at.path), at.path); err != nil {
		return "", err
	}
	key := &descriptorpb.FieldDescriptorProto{
		Name: proto.String("key"), JsonName: proto.String("key"), Number: proto.Int32(1),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: scalarTypes[t.key.kind].Enum(),
	}
	value := &descriptorpb.FieldDescriptorProto{
		Name: proto.String("value"), JsonName: proto.String("value"), Number: proto.Int32(2),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
	}
	if err := b.setType(at, value, t.value, roleValue, at.path+"{value}"); err != nil {
		return "", err
	}
	at.msg.NestedType = append(at.msg.NestedType, &descriptorpb.DescriptorProto{
		Name:    proto.String(entryName),
		Field:   []*descriptorpb.FieldDescriptorProto{key, value},
		Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
	})
	return entryName, nil
}

// protoName is the proto field name of a column (or a struct's field)
// named col: sanitized, with a leading '_' if it starts with a digit; ""
// for an empty name.
func protoName(col string) string {
	n := sanitize(col)
	if n != "" && isDigit(n[0]) {
		n = "_" + n
	}
	return n
}

// sanitize replaces every character but an ASCII letter, digit or '_'
// with '_' (one per character; a byte of invalid UTF-8 counts as one).
func sanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r < utf8.RuneSelf && (isLetter(byte(r)) || isDigit(byte(r)) || r == '_') {
			b.WriteByte(byte(r))
		} else {
			b.WriteByte('_')
		}
		i += n
	}
	return b.String()
}

// camel is a proto identifier in CamelCase, as protobuf names a map's
// entry (without "Entry"): underscores dropped, the letter after one, and
// the first, in upper case. One that does not start with a letter then
// (a name of underscores and digits) gets a leading "X".
func camel(ident string) string {
	n := camelCase(ident)
	if n == "" || !isLetter(n[0]) {
		n = "X" + n
	}
	return n
}

// camelCase drops the underscores of ident and puts its first letter, and
// each letter after an underscore, in upper case.
func camelCase(ident string) string {
	var b strings.Builder
	up := true
	for i := 0; i < len(ident); i++ {
		c := ident[i]
		switch {
		case c == '_':
			up = true
		case up && c >= 'a' && c <= 'z':
			b.WriteByte(c - 'a' + 'A')
			up = false
		default:
			b.WriteByte(c)
			up = false
		}
	}
	return b.String()
}

func validIdent(s string) bool {
	return s != "" && isLetter(s[0]) && sanitize(s) == s
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
