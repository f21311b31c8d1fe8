package record

// ProtoFit: whether the message of a proto stream fits a table's columns,
// field by field and type by type, and what its records must then hold
// (checked by ProtoFit.Check, tablefit_record.go).

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The proto kinds of the signed integers, by width.
var (
	int64Kinds = []protoreflect.Kind{protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind}
	int32Kinds = []protoreflect.Kind{protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind}
)

// scalarFits maps a scalar column kind to the proto field kinds that hold
// it: those of the official mapping (docs/protocol.md §11), the other
// encodings of the same signed width, and a narrower kind where every
// value fits and means the same (int32 into BIGINT, float into DOUBLE).
// An int32 is not taken for a TIMESTAMP: its microseconds would span an
// hour, and a DATE's days sent there would be read as microseconds.
// Unsigned kinds are taken nowhere (the tables have no unsigned type, and
// a uint64 does not fit a BIGINT); an enum only for a STRING, as its
// value's name.
var scalarFits = map[ucKind][]protoreflect.Kind{
	kindString:       {protoreflect.StringKind, protoreflect.EnumKind},
	kindVariant:      {protoreflect.StringKind},
	kindDecimal:      {protoreflect.StringKind},
	kindLong:         slices.Concat(int64Kinds, int32Kinds),
	kindTimestamp:    int64Kinds,
	kindTimestampNTZ: int64Kinds,
	kindInt:          int32Kinds,
	kindShort:        int32Kinds,
	kindByte:         int32Kinds,
	kindDate:         int32Kinds,
	kindDouble:       {protoreflect.DoubleKind, protoreflect.FloatKind},
	kindFloat:        {protoreflect.FloatKind},
	kindBoolean:      {protoreflect.BoolKind},
	kindBinary:       {protoreflect.BytesKind},
}

// ProtoFit is the message of a proto stream that fits a table
// (TableChecker.ProtoFit), ready to check the stream's records. It is
// immutable and safe for concurrent use.
type ProtoFit struct {
	md   protoreflect.MessageDescriptor
	root *fitMsg
}

// fitMsg is what the records of one message, fitted to a table's columns
// or a STRUCT's fields, must hold beyond decoding.
type fitMsg struct {
	fields []fitField
}

// fitField is one field of a fitted message.
type fitField struct {
	fd protoreflect.FieldDescriptor
	// mustSet: the column is NOT NULL and the field has presence, so a
	// record must set it.
	mustSet bool
	// enumNames: an enum fitted to a STRING column, whose values must
	// have a name.
	enumNames bool
	// msg: the fitted message of a STRUCT column, an ARRAY's STRUCT
	// elements or a MAP's STRUCT values.
	msg *fitMsg
}

// ProtoFit checks the message md of a proto stream (the descriptor its
// client opens it with) against the table. md fits when:
//
//   - every field names a column: the field's name is the column's name or
//     its proto name ("unit_price" for "unit price", as
//     DescriptorFromColumns names it), or else the field's json_name
//     (protobuf's lowerCamelCase of its name, unless set) is the column's
//     name; no two fields name one column;
//   - every field is of a type that holds the column's: a scalar of a kind
//     scalarFits allows (STRING, VARIANT, DECIMAL: string, and an enum for
//     a STRING; BIGINT: int64, sint64, sfixed64 and the int32 kinds;
//     TIMESTAMP, TIMESTAMP_NTZ: int64, sint64, sfixed64; INT, SMALLINT,
//     TINYINT, DATE: int32, sint32, sfixed32; DOUBLE: double or float;
//     FLOAT: float; BOOLEAN: bool; BINARY: bytes), a message fitting a
//     STRUCT by the same rules, a repeated field (not a map) whose
//     elements fit an ARRAY's, a map whose key and value fit a MAP's; a
//     singular field for anything else. Unsigned kinds, wrapper messages
//     (google.protobuf.Int64Value, ...) and groups for scalars are
//     refused;
//   - every NOT NULL column, at every level, has a field. A nullable
//     column may have none.
//
// A field's label need not follow the column's nullability: a field with
// presence for a NOT NULL column is checked record by record
// (ProtoFit.Check), and a proto3 scalar without presence writes its
// default when left out. Otherwise ProtoFit returns a *FitError naming
// the first field (or NOT NULL column) that does not fit, and why.
func (c *TableChecker) ProtoFit(md protoreflect.MessageDescriptor) (*ProtoFit, error) {
	if md == nil {
		return nil, &FitError{Reason: "no message descriptor"}
	}
	root, err := fitMessage(md, c.fields, "")
	if err != nil {
		return nil, err
	}
	return &ProtoFit{md: md, root: root}, nil
}

// Descriptor returns the message that was fitted.
func (f *ProtoFit) Descriptor() protoreflect.MessageDescriptor { return f.md }

// fitMessage fits md to the columns (or a STRUCT's fields) cols; path is
// the message's path in the stream's message, "" for the message itself.
func fitMessage(md protoreflect.MessageDescriptor, cols []ucField, path string) (*fitMsg, error) {
	byProto := make(map[string]int, len(cols))
	byName := make(map[string]int, len(cols))
	for i, col := range cols {
		byProto[protoName(col.name)] = i
		byName[col.name] = i
	}
	claimed := make([]string, len(cols)) // the field that names each column
	fm := &fitMsg{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		name := string(fd.Name())
		fpath := join(path, name)
		ci, ok := byProto[name]
		if !ok {
			ci, ok = byName[fd.JSONName()]
		}
		if !ok {
			return nil, noColumn(fd, fpath)
		}
		if claimed[ci] != "" {
			return nil, fitErrorf(fpath, "column %q is already the field %q", cols[ci].name, claimed[ci])
		}
		claimed[ci] = name
		ff, err := fitColumn(fd, cols[ci], fpath)
		if err != nil {
			return nil, err
		}
		fm.fields = append(fm.fields, ff)
	}
	for ci, col := range cols {
		if claimed[ci] == "" && !col.nullable {
			return nil, fitErrorf(join(path, col.name), "the column is NOT NULL and %s has no field for it", md.FullName())
		}
	}
	return fm, nil
}

// fitColumn fits field fd to the column col.
func fitColumn(fd protoreflect.FieldDescriptor, col ucField, path string) (fitField, error) {
	ff := fitField{fd: fd, mustSet: !col.nullable && fd.HasPresence()}
	var err error
	switch t := col.typ; t.kind {
	case kindArray:
		if fd.IsMap() || !fd.IsList() {
			return ff, fitErrorf(path, "the column is an ARRAY and needs a repeated field, not %s", describeField(fd))
		}
		ff.msg, ff.enumNames, err = fitValue(fd, t.elem, path+"[]")
	case kindMap:
		if !fd.IsMap() {
			return ff, fitErrorf(path, "the column is a MAP and needs a map field, not %s", describeField(fd))
		}
		if err := fitScalar(fd.MapKey(), t.key, path+"{key}"); err != nil {
			return ff, err
		}
		ff.msg, ff.enumNames, err = fitValue(fd.MapValue(), t.value, path+"{value}")
	default:
		if fd.IsList() || fd.IsMap() {
			return ff, fitErrorf(path, "the column is %s and needs a singular field, not %s", kindNames[t.kind], describeField(fd))
		}
		ff.msg, ff.enumNames, err = fitValue(fd, t, path)
	}
	return ff, err
}

// fitValue fits one value of fd (an element, a map's value) to t: a
// STRUCT's message, or a scalar. It returns the fitted message of a
// STRUCT, and whether fd is an enum whose values need names.
func fitValue(fd protoreflect.FieldDescriptor, t *ucType, path string) (*fitMsg, bool, error) {
	if t.kind != kindStruct {
		return nil, fd.Kind() == protoreflect.EnumKind, fitScalar(fd, t, path)
	}
	if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
		return nil, false, fitErrorf(path, "the column is a STRUCT and needs a message field, not %s", fd.Kind())
	}
	fm, err := fitMessage(fd.Message(), t.fields, path)
	return fm, false, err
}

// fitScalar fits a scalar value of fd to the scalar type t.
func fitScalar(fd protoreflect.FieldDescriptor, t *ucType, path string) error {
	kinds := scalarFits[t.kind]
	if slices.Contains(kinds, fd.Kind()) {
		return nil
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
	}
	return fitErrorf(path, "the field is %s and the column %s, which takes only %s", fd.Kind(), kindNames[t.kind], strings.Join(names, ", "))
}

// noColumn is the error of a field that names no column.
func noColumn(fd protoreflect.FieldDescriptor, path string) error {
	if j := fd.JSONName(); j != string(fd.Name()) {
		return fitErrorf(path, "no column is named %q (or has that proto name) or %q (the field's json_name)", fd.Name(), j)
	}
	return fitErrorf(path, "no column is named %q (or has that proto name)", fd.Name())
}

// describeField says what kind of field fd is, for errors.
func describeField(fd protoreflect.FieldDescriptor) string {
	switch {
	case fd.IsMap():
		return "a map"
	case fd.IsList():
		return "a repeated " + fd.Kind().String()
	default:
		return "a singular " + fd.Kind().String()
	}
}
