package record

// JSONToProto: one JSON object to the serialized record of a proto
// message type, field by field, with errors that name the field. The
// scalars are read in convert_scalar.go.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ConvertFault is what is wrong with a JSON record that JSONToProto
// refuses.
type ConvertFault int

// The faults of a *ConvertError.
const (
	// FaultSyntax: the record is not one JSON object in valid UTF-8.
	FaultSyntax ConvertFault = iota + 1
	// FaultUnknownField: a field the message does not have.
	FaultUnknownField
	// FaultDuplicateField: a field (or a map key) given twice.
	FaultDuplicateField
	// FaultWrongType: a value of the wrong JSON type for its field, or
	// out of its range.
	FaultWrongType
	// FaultNull: null for a NOT NULL column, an ARRAY, a MAP, or an
	// element or value of one.
	FaultNull
	// FaultMissing: a NOT NULL column (a required field) left out.
	FaultMissing
)

var faultNames = map[ConvertFault]string{
	FaultSyntax: "not a JSON object", FaultUnknownField: "unknown field", FaultDuplicateField: "duplicate field",
	FaultWrongType: "wrong type", FaultNull: "null not allowed", FaultMissing: "missing field",
}

// String names the fault.
func (f ConvertFault) String() string { return enumName(faultNames, f, "ConvertFault") }

// ConvertError is a JSON record that does not fit its message type. Field
// is the path of the value at fault, as the record spells it: "address.city",
// "tags[2]", `attrs["k"]`; empty for the record itself.
type ConvertError struct {
	Field  string
	Fault  ConvertFault
	Reason string
	Err    error
}

// Error names the field, the fault and the reason.
func (e *ConvertError) Error() string {
	s := "JSON record"
	if e.Field != "" {
		s += ": field " + strconv.Quote(e.Field)
	}
	s += ": " + e.Fault.String()
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error, if any.
func (e *ConvertError) Unwrap() error { return e.Err }

// JSONToProto converts one JSON object to the serialized record of md,
// following protobuf's JSON mapping for the types DescriptorFromColumns
// makes: a field is named by its json_name (the column's name) or its
// proto name; an integer is a JSON number or a string holding one (a
// BIGINT beyond 2^53 as a string keeps every digit), integral and in the
// field's range; a float or double a number or a string, "NaN",
// "Infinity" and "-Infinity" among them; bytes (BINARY) a base64 string,
// standard or URL alphabet, padded or not; a message an object; a
// repeated field an array; a map an object whose keys are the keys'
// text. Null leaves a nullable field out; for a required field (a NOT NULL
// column), an array, a map, or an element or value of one, it is refused.
// Enums take their value's name or number; well-known types are read as
// ordinary messages.
//
// A record that does not fit is a *ConvertError naming the field, and
// nothing is returned. It never panics, whatever data holds.
func JSONToProto(md protoreflect.MessageDescriptor, data []byte) ([]byte, error) {
	// The grammar first, in one pass (the check every JSON record gets):
	// the converter's scanner then only finds where tokens end.
	switch err := CheckJSON(data); {
	case errors.Is(err, ErrNotObject):
		return nil, &ConvertError{Fault: FaultSyntax, Reason: "a record must be a JSON object", Err: err}
	case errors.Is(err, ErrInvalidUTF8):
		return nil, &ConvertError{Fault: FaultSyntax, Reason: "invalid UTF-8", Err: err}
	case err != nil:
		return nil, &ConvertError{Fault: FaultSyntax, Reason: "invalid JSON", Err: err}
	}
	c := &converter{sc: scanner{b: data}}
	if _, err := c.token(""); err != nil { // the '{'
		return nil, err
	}
	m := dynamicpb.NewMessage(md)
	if err := c.object(m, ""); err != nil {
		return nil, err
	}
	// Deterministic: the same JSON gives the same bytes (map entries in
	// key order), so that a record converted again after a crash is the
	// same payload, which a strict server compares with the stored one.
	b, err := proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(m) // required fields were checked
	if err != nil {
		return nil, &ConvertError{Fault: FaultWrongType, Reason: "the message does not encode", Err: err}
	}
	return b, nil
}

// converter reads one JSON record token by token.
type converter struct {
	sc scanner
}

// token reads the next token; a syntax error (which CheckJSON has ruled
// out) is a FaultSyntax at path.
func (c *converter) token(path string) (json.Token, error) {
	tok, err := c.sc.token()
	if err != nil {
		return nil, &ConvertError{Field: path, Fault: FaultSyntax, Reason: "invalid JSON", Err: err}
	}
	return tok, nil
}

// object fills m from an object whose '{' was read, up to its '}'.
func (c *converter) object(m protoreflect.Message, path string) error {
	fields := m.Descriptor().Fields()
	seen := map[protoreflect.FieldNumber]bool{}
	for c.sc.more() {
		tok, err := c.token(path)
		if err != nil {
			return err
		}
		key, _ := tok.(string) // More and Token guarantee a key here
		fpath := join(path, key)
		fd := fields.ByJSONName(key)
		if fd == nil {
			fd = fields.ByTextName(key)
		}
		if fd == nil {
			return &ConvertError{Field: fpath, Fault: FaultUnknownField, Reason: fmt.Sprintf("%s has no such field", m.Descriptor().FullName())}
		}
		if seen[fd.Number()] {
			return &ConvertError{Field: fpath, Fault: FaultDuplicateField, Reason: "the field is given twice"}
		}
		seen[fd.Number()] = true
		if err := c.field(m, fd, fpath); err != nil {
			return err
		}
	}
	if _, err := c.token(path); err != nil { // the '}'
		return err
	}
	required := m.Descriptor().RequiredNumbers()
	for i := range required.Len() {
		if fd := fields.ByNumber(required.Get(i)); !m.Has(fd) {
			return &ConvertError{Field: join(path, fd.JSONName()), Fault: FaultMissing, Reason: "a NOT NULL column must be given"}
		}
	}
	return nil
}

// field reads the value of field fd into m.
func (c *converter) field(m protoreflect.Message, fd protoreflect.FieldDescriptor, path string) error {
	tok, err := c.token(path)
	if err != nil {
		return err
	}
	if tok == nil {
		switch {
		case fd.IsList() || fd.IsMap():
			return &ConvertError{Field: path, Fault: FaultNull, Reason: "an ARRAY or MAP cannot be null; leave the field out or send it empty"}
		case fd.Cardinality() == protoreflect.Required:
			return &ConvertError{Field: path, Fault: FaultNull, Reason: "the column is NOT NULL"}
		}
		return nil
	}
	switch {
	case fd.IsMap():
		if tok != json.Delim('{') {
			return wrongType(path, "an object (a MAP)", tok)
		}
		return c.mapValue(m.Mutable(fd).Map(), fd, path)
	case fd.IsList():
		if tok != json.Delim('[') {
			return wrongType(path, "an array", tok)
		}
		list := m.Mutable(fd).List()
		for i := 0; c.sc.more(); i++ {
			epath := path + "[" + strconv.Itoa(i) + "]"
			etok, err := c.token(epath)
			if err != nil {
				return err
			}
			v, err := c.value(etok, fd, list.NewElement, epath)
			if err != nil {
				return err
			}
			list.Append(v)
		}
		_, err := c.token(path) // the ']'
		return err
	default:
		v, err := c.value(tok, fd, func() protoreflect.Value { return m.NewField(fd) }, path)
		if err != nil {
			return err
		}
		m.Set(fd, v)
		return nil
	}
}

// mapValue reads the entries of a map whose '{' was read.
func (c *converter) mapValue(mp protoreflect.Map, fd protoreflect.FieldDescriptor, path string) error {
	kd, vd := fd.MapKey(), fd.MapValue()
	for c.sc.more() {
		tok, err := c.token(path)
		if err != nil {
			return err
		}
		ktext, _ := tok.(string)
		epath := path + "[" + strconv.Quote(ktext) + "]"
		key, err := mapKey(kd, ktext, epath)
		if err != nil {
			return err
		}
		if mp.Has(key) {
			return &ConvertError{Field: epath, Fault: FaultDuplicateField, Reason: "the key is given twice"}
		}
		vtok, err := c.token(epath)
		if err != nil {
			return err
		}
		v, err := c.value(vtok, vd, mp.NewValue, epath)
		if err != nil {
			return err
		}
		mp.Set(key, v)
	}
	_, err := c.token(path) // the '}'
	return err
}

// value reads one value of fd (an element of a list or a map's value
// included) that starts with tok. newMsg makes the message of a message
// field.
func (c *converter) value(tok json.Token, fd protoreflect.FieldDescriptor, newMsg func() protoreflect.Value, path string) (protoreflect.Value, error) {
	if tok == nil {
		return protoreflect.Value{}, &ConvertError{Field: path, Fault: FaultNull, Reason: "an ARRAY's element or a MAP's value cannot be null"}
	}
	if fd.Message() == nil {
		return scalar(fd, tok, path)
	}
	if tok != json.Delim('{') {
		return protoreflect.Value{}, wrongType(path, "an object", tok)
	}
	v := newMsg()
	if err := c.object(v.Message(), path); err != nil {
		return protoreflect.Value{}, err
	}
	return v, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
