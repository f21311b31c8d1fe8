package record

// ProtoFit.Check: one record of a proto stream whose message fits a
// table: it decodes as record.Checker decodes it, and sets what the
// table's NOT NULL columns demand.

import (
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Check returns nil if the table accepts rec, a record of the fitted
// message. rec must decode under the message exactly as a Checker of a
// PROTO stream with it decodes it (required fields set, no unknown
// field, no closed enum out of its values), and the error is then the
// Checker's. Beyond that, every field of a NOT NULL column that has
// presence (a proto2 optional or required field, a proto3 optional, a
// message, a member of a oneof) must be set, in the record and, inside a
// STRUCT that is present (an ARRAY's STRUCT elements and a MAP's STRUCT
// values among them), in the STRUCT; and an enum field of a STRING column
// must hold a value that has a name, which is what the column receives.
// A field without presence (a proto3 scalar, an ARRAY, a MAP) passes
// whether set or not. The error is then a *FitError naming the field.
func (f *ProtoFit) Check(rec []byte) error {
	m, err := decodeProto(f.md, rec)
	if err != nil {
		return err
	}
	return f.root.check(m, "")
}

// check checks the fields of m, a message at path.
func (fm *fitMsg) check(m protoreflect.Message, path string) error {
	for i := range fm.fields {
		ff := &fm.fields[i]
		fpath := join(path, string(ff.fd.Name()))
		if !m.Has(ff.fd) {
			if ff.mustSet {
				return fitErrorf(fpath, "the column is NOT NULL and the field is not set")
			}
			continue
		}
		if ff.msg == nil && !ff.enumNames {
			continue // a scalar: decoding checked it
		}
		v := m.Get(ff.fd)
		var err error
		switch {
		case ff.fd.IsMap():
			// With several faulty values, which one is named depends on
			// the map's order.
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				err = ff.checkValue(ff.fd.MapValue(), mv, fpath+"["+keyText(k)+"]")
				return err == nil
			})
		case ff.fd.IsList():
			l := v.List()
			for j := 0; j < l.Len() && err == nil; j++ {
				err = ff.checkValue(ff.fd, l.Get(j), fpath+"["+strconv.Itoa(j)+"]")
			}
		default:
			err = ff.checkValue(ff.fd, v, fpath)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkValue checks one value of ff (an element, a map's value), whose
// field is fd, at path.
func (ff *fitField) checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) error {
	if ff.msg != nil {
		return ff.msg.check(v.Message(), path)
	}
	if ff.enumNames && fd.Enum().Values().ByNumber(v.Enum()) == nil {
		return fitErrorf(path, "%d is not a value of %s, and a STRING column takes the value's name", v.Enum(), fd.Enum().FullName())
	}
	return nil
}

// keyText is a map key as a path shows it: a string quoted, another key
// as its value.
func keyText(k protoreflect.MapKey) string {
	if s, ok := k.Interface().(string); ok {
		return strconv.Quote(s)
	}
	return k.String()
}
