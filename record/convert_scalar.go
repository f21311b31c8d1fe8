package record

// The scalar values of JSONToProto, as protobuf's JSON mapping reads them:
// integers from numbers or strings, exactly (no float64 on the way),
// floats with their special names, bytes from base64, map keys from their
// text.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// scalar reads one scalar value of fd from tok (a string, a json.Number,
// a bool or a delimiter).
func scalar(fd protoreflect.FieldDescriptor, tok json.Token, path string) (protoreflect.Value, error) {
	str, isStr := tok.(string)
	num, isNum := tok.(json.Number)
	text := string(num)
	if isStr {
		text = str
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if isStr {
			return protoreflect.ValueOfString(str), nil
		}
	case protoreflect.BytesKind:
		if isStr {
			b, err := decodeBase64(str)
			if err != nil {
				return protoreflect.Value{}, &ConvertError{Field: path, Fault: FaultWrongType, Reason: "BINARY must be base64", Err: err}
			}
			return protoreflect.ValueOfBytes(b), nil
		}
	case protoreflect.BoolKind:
		if b, ok := tok.(bool); ok {
			return protoreflect.ValueOfBool(b), nil
		}
	case protoreflect.EnumKind:
		if isStr {
			if ev := fd.Enum().Values().ByName(protoreflect.Name(str)); ev != nil {
				return protoreflect.ValueOfEnum(ev.Number()), nil
			}
			return protoreflect.Value{}, &ConvertError{Field: path, Fault: FaultWrongType, Reason: fmt.Sprintf("%q is not a value of %s", str, fd.Enum().FullName())}
		}
		if isNum {
			n, err := parseInt(text, 32)
			if err != nil {
				return protoreflect.Value{}, rangeError(path, err)
			}
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n)), nil
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		if isStr || isNum {
			bits := 64
			if fd.Kind() == protoreflect.Int32Kind || fd.Kind() == protoreflect.Sint32Kind || fd.Kind() == protoreflect.Sfixed32Kind {
				bits = 32
			}
			n, err := parseInt(text, bits)
			if err != nil {
				return protoreflect.Value{}, rangeError(path, err)
			}
			if bits == 32 {
				return protoreflect.ValueOfInt32(int32(n)), nil
			}
			return protoreflect.ValueOfInt64(n), nil
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if isStr || isNum {
			bits := 64
			if fd.Kind() == protoreflect.Uint32Kind || fd.Kind() == protoreflect.Fixed32Kind {
				bits = 32
			}
			n, err := parseUint(text, bits)
			if err != nil {
				return protoreflect.Value{}, rangeError(path, err)
			}
			if bits == 32 {
				return protoreflect.ValueOfUint32(uint32(n)), nil
			}
			return protoreflect.ValueOfUint64(n), nil
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if isStr || isNum {
			bits := 64
			if fd.Kind() == protoreflect.FloatKind {
				bits = 32
			}
			f, err := parseFloat(text, isStr, bits)
			if err != nil {
				return protoreflect.Value{}, rangeError(path, err)
			}
			if bits == 32 {
				return protoreflect.ValueOfFloat32(float32(f)), nil
			}
			return protoreflect.ValueOfFloat64(f), nil
		}
	}
	return protoreflect.Value{}, wrongType(path, kindWant(fd), tok)
}

// mapKey reads a map key from its JSON text.
func mapKey(kd protoreflect.FieldDescriptor, text, path string) (protoreflect.MapKey, error) {
	switch kd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(text).MapKey(), nil
	case protoreflect.BoolKind:
		switch text {
		case "true":
			return protoreflect.ValueOfBool(true).MapKey(), nil
		case "false":
			return protoreflect.ValueOfBool(false).MapKey(), nil
		}
		return protoreflect.MapKey{}, &ConvertError{Field: path, Fault: FaultWrongType, Reason: `a BOOLEAN key must be "true" or "false"`}
	}
	v, err := scalar(kd, text, path)
	if err != nil {
		return protoreflect.MapKey{}, err
	}
	return v.MapKey(), nil
}

// kindWant describes what a field of fd's kind takes.
func kindWant(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return "a string"
	case protoreflect.BytesKind:
		return "a base64 string"
	case protoreflect.BoolKind:
		return "true or false"
	case protoreflect.EnumKind:
		return "an enum value's name or number"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "a number"
	default:
		return "an integer (a number or a string)"
	}
}

// wrongType is a value of the wrong JSON type.
func wrongType(path, want string, tok json.Token) error {
	var got string
	switch v := tok.(type) {
	case json.Delim:
		got = map[json.Delim]string{'{': "an object", '[': "an array"}[v]
	case string:
		got = "a string"
	case json.Number:
		got = "a number"
	case bool:
		got = "a boolean"
	default:
		got = "null"
	}
	return &ConvertError{Field: path, Fault: FaultWrongType, Reason: fmt.Sprintf("want %s, got %s", want, got)}
}

func rangeError(path string, err error) error {
	return &ConvertError{Field: path, Fault: FaultWrongType, Err: err}
}

// maxExponent bounds a number's exponent: beyond it no integer or float
// type holds the value (or it is zero), and the digits are not expanded.
const maxExponent = 10000

// number is a JSON number's text, split: -?int(.frac)?([eE][+-]?exp)?.
type number struct {
	neg       bool
	int, frac string
	exp       int
}

// splitNumber checks s against JSON's number grammar (leading zeros
// allowed, as in a string holding a number) and splits it.
func splitNumber(s string) (number, error) {
	var n number
	bad := fmt.Errorf("%q is not a number", s)
	rest := s
	if strings.HasPrefix(rest, "-") {
		n.neg, rest = true, rest[1:]
	}
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		e := rest[i+1:]
		digits := e
		if digits != "" && (digits[0] == '+' || digits[0] == '-') {
			digits = digits[1:]
		}
		if digits == "" || strings.Trim(digits, "0123456789") != "" {
			return n, bad
		}
		v, err := strconv.Atoi(e)
		if err != nil || v > maxExponent || v < -maxExponent {
			return n, fmt.Errorf("%s is out of range", s)
		}
		n.exp, rest = v, rest[:i]
	}
	intPart, frac, dot := strings.Cut(rest, ".")
	if intPart == "" || dot && frac == "" || strings.Trim(intPart+frac, "0123456789") != "" {
		return n, bad
	}
	n.int, n.frac = intPart, frac
	return n, nil
}

// parseInt reads a signed integer of bits bits from a JSON number's text
// (exponent and fraction allowed when the value is integral: "1e3",
// "2.0").
func parseInt(s string, bits int) (int64, error) {
	n, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	digits, err := integralDigits(n, s)
	if err != nil {
		return 0, err
	}
	if n.neg {
		digits = "-" + digits
	}
	v, err := strconv.ParseInt(digits, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s is out of range for a %d-bit integer", s, bits)
	}
	return v, nil
}

// parseUint reads an unsigned integer of bits bits, as parseInt does.
func parseUint(s string, bits int) (uint64, error) {
	n, err := splitNumber(s)
	if err != nil {
		return 0, err
	}
	digits, err := integralDigits(n, s)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(digits, 10, bits)
	if err != nil || n.neg && v != 0 {
		return 0, fmt.Errorf("%s is out of range for an unsigned %d-bit integer", s, bits)
	}
	return v, nil
}

// integralDigits returns the decimal digits of n's magnitude, exactly, or
// says why it is not an integer. Beyond 20 digits it is out of every
// range, and is not expanded.
func integralDigits(n number, s string) (string, error) {
	d := strings.TrimLeft(n.int+n.frac, "0")
	exp := n.exp - len(n.frac)
	if d == "" {
		return "0", nil
	}
	if exp < 0 {
		if -exp > len(d) || strings.Trim(d[len(d)+exp:], "0") != "" {
			return "", fmt.Errorf("%s is not an integer", s)
		}
		return d[:len(d)+exp], nil
	}
	if len(d)+exp > 20 {
		return "", fmt.Errorf("%s is out of range", s)
	}
	return d + strings.Repeat("0", exp), nil
}

// parseFloat reads a float of bits bits: a JSON number, or a string
// holding one or "NaN", "Infinity", "-Infinity". A finite value beyond the
// type's range is refused.
func parseFloat(s string, quoted bool, bits int) (float64, error) {
	if quoted {
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
	}
	if _, err := splitNumber(s); err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(s, bits)
	if err != nil {
		return 0, fmt.Errorf("%s is out of range for a %d-bit float", s, bits)
	}
	return f, nil
}

// decodeBase64 accepts the standard and the URL alphabet, padded or not,
// as protobuf's JSON mapping does.
func decodeBase64(s string) ([]byte, error) {
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	return enc.DecodeString(s)
}
