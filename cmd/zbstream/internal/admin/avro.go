package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
)

// An Avro stream's records are shown as JSON in the Avro specification's
// JSON encoding: a record is an object of its fields in schema order, a
// map an object, an enum its symbol, bytes and fixed a string of the code
// points U+0000-U+00FF (one per byte), a union null or {"type name":
// value} (the full name of a named type), and a logical type as the type
// it is encoded with. A float that JSON has no number for is a string:
// "NaN", "Infinity", "-Infinity". A datum that does not decode completely
// (not possible for what the server accepted) is shown as base64 bytes.

// maxAvroDepth bounds the nesting of a datum, as the server does.
const maxAvroDepth = 10000

// avroJSON renders the datums of one Avro stream.
type avroJSON struct {
	schema avro.Schema
}

// newAvroJSON parses a stream's writer schema, with a cache of its own
// (hamba/avro's default cache is global).
func newAvroJSON(schema string) (a *avroJSON, err error) {
	defer func() {
		if p := recover(); p != nil {
			a, err = nil, fmt.Errorf("avro schema: parser failed: %v", p)
		}
	}()
	s, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	return &avroJSON{schema: s}, nil
}

// render returns datum as JSON, or why it cannot. The JSON may be at most
// 64 times the datum's size (plus 64 KiB): an array of a billion nulls
// takes a few bytes.
func (a *avroJSON) render(datum []byte) (json.RawMessage, error) {
	w := avroWriter{in: datum, limit: 64*len(datum) + 64<<10}
	if err := w.value(a.schema, 0); err != nil {
		return nil, err
	}
	if w.pos != len(datum) {
		return nil, fmt.Errorf("%d bytes left over after the datum", len(datum)-w.pos)
	}
	return w.out.Bytes(), nil
}

var (
	errAvroTruncated = errors.New("datum ends early")
	errAvroTooLarge  = errors.New("datum too large to show as JSON")
)

// avroWriter reads a datum and writes its JSON.
type avroWriter struct {
	in    []byte
	pos   int
	out   bytes.Buffer
	limit int
}

func (w *avroWriter) value(s avro.Schema, depth int) error {
	if depth > maxAvroDepth {
		return fmt.Errorf("datum nested deeper than %d levels", maxAvroDepth)
	}
	if w.out.Len() > w.limit {
		return errAvroTooLarge
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return w.value(s.Schema(), depth)
	case *avro.NullSchema:
		w.out.WriteString("null")
	case *avro.PrimitiveSchema:
		return w.primitive(s.Type())
	case *avro.RecordSchema:
		w.out.WriteByte('{')
		for i, f := range s.Fields() {
			if i > 0 {
				w.out.WriteByte(',')
			}
			w.str(f.Name())
			w.out.WriteByte(':')
			if err := w.value(f.Type(), depth+1); err != nil {
				return err
			}
		}
		w.out.WriteByte('}')
	case *avro.EnumSchema:
		i, err := w.long()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(s.Symbols())) {
			return fmt.Errorf("enum %s has no symbol %d", s.FullName(), i)
		}
		w.str(s.Symbols()[i])
	case *avro.FixedSchema:
		return w.codePoints(s.Size())
	case *avro.ArraySchema:
		return w.blocks(s.Items(), false, depth)
	case *avro.MapSchema:
		return w.blocks(s.Values(), true, depth)
	case *avro.UnionSchema:
		i, err := w.long()
		if err != nil {
			return err
		}
		types := s.Types()
		if i < 0 || i >= int64(len(types)) {
			return fmt.Errorf("union has no branch %d", i)
		}
		t := types[i]
		if t.Type() == avro.Null {
			w.out.WriteString("null")
			return nil
		}
		w.out.WriteByte('{')
		w.str(avroTypeName(t))
		w.out.WriteByte(':')
		if err := w.value(t, depth+1); err != nil {
			return err
		}
		w.out.WriteByte('}')
	default:
		return fmt.Errorf("unsupported Avro type %q", s.Type())
	}
	return nil
}

// avroTypeName names a union's branch: a named type by its full name,
// another by its type.
func avroTypeName(s avro.Schema) string {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema().FullName()
	}
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

func (w *avroWriter) primitive(t avro.Type) error {
	switch t {
	case avro.Boolean:
		if w.pos == len(w.in) {
			return errAvroTruncated
		}
		switch w.in[w.pos] {
		case 0:
			w.out.WriteString("false")
		case 1:
			w.out.WriteString("true")
		default:
			return fmt.Errorf("boolean byte 0x%02x", w.in[w.pos])
		}
		w.pos++
	case avro.Int, avro.Long:
		v, err := w.long()
		if err != nil {
			return err
		}
		if t == avro.Int && (v < math.MinInt32 || v > math.MaxInt32) {
			return fmt.Errorf("int %d does not fit in 32 bits", v)
		}
		w.out.WriteString(strconv.FormatInt(v, 10))
	case avro.Float:
		b, err := w.take(4)
		if err != nil {
			return err
		}
		w.float(float64(math.Float32frombits(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)), 32)
	case avro.Double:
		b, err := w.take(8)
		if err != nil {
			return err
		}
		var u uint64
		for i := 7; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		w.float(math.Float64frombits(u), 64)
	case avro.String:
		b, err := w.lengthPrefixed()
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return errors.New("string is not valid UTF-8")
		}
		w.str(string(b))
	case avro.Bytes:
		n, err := w.length()
		if err != nil {
			return err
		}
		return w.codePoints(n)
	default:
		return fmt.Errorf("unsupported Avro type %q", t)
	}
	return nil
}

func (w *avroWriter) float(f float64, bits int) {
	switch {
	case math.IsNaN(f):
		w.out.WriteString(`"NaN"`)
	case math.IsInf(f, 1):
		w.out.WriteString(`"Infinity"`)
	case math.IsInf(f, -1):
		w.out.WriteString(`"-Infinity"`)
	default:
		w.out.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
	}
}

// blocks writes an array's items or a map's entries.
func (w *avroWriter) blocks(items avro.Schema, isMap bool, depth int) error {
	open, end := byte('['), byte(']')
	if isMap {
		open, end = '{', '}'
	}
	w.out.WriteByte(open)
	first := true
	for {
		count, err := w.long()
		if err != nil {
			return err
		}
		if count == 0 {
			break
		}
		if count < 0 {
			if count == math.MinInt64 {
				return errors.New("block count out of range")
			}
			count = -count
			if _, err := w.long(); err != nil { // the block's size in bytes
				return err
			}
		}
		for range count {
			if !first {
				w.out.WriteByte(',')
			}
			first = false
			if isMap {
				k, err := w.lengthPrefixed()
				if err != nil {
					return err
				}
				if !utf8.Valid(k) {
					return errors.New("map key is not valid UTF-8")
				}
				w.str(string(k))
				w.out.WriteByte(':')
			}
			if err := w.value(items, depth+1); err != nil {
				return err
			}
		}
	}
	w.out.WriteByte(end)
	return nil
}

// long reads a zig-zag varint of at most 10 bytes.
func (w *avroWriter) long() (int64, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		if w.pos == len(w.in) {
			return 0, errAvroTruncated
		}
		c := w.in[w.pos]
		w.pos++
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(v>>1) ^ -int64(v&1), nil
		}
	}
	return 0, errors.New("varint longer than 10 bytes")
}

func (w *avroWriter) length() (int, error) {
	n, err := w.long()
	if err != nil {
		return 0, err
	}
	if n < 0 || n > int64(len(w.in)-w.pos) {
		return 0, errAvroTruncated
	}
	return int(n), nil
}

func (w *avroWriter) take(n int) ([]byte, error) {
	if n > len(w.in)-w.pos {
		return nil, errAvroTruncated
	}
	b := w.in[w.pos : w.pos+n]
	w.pos += n
	return b, nil
}

func (w *avroWriter) lengthPrefixed() ([]byte, error) {
	n, err := w.length()
	if err != nil {
		return nil, err
	}
	return w.take(n)
}

// codePoints writes n bytes as a JSON string of the code points
// U+0000-U+00FF.
func (w *avroWriter) codePoints(n int) error {
	b, err := w.take(n)
	if err != nil {
		return err
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	w.str(string(r))
	return nil
}

// str writes s, valid UTF-8, as a JSON string (with no HTML escapes:
// the records command prints it as it is).
func (w *avroWriter) str(s string) {
	const hex = "0123456789abcdef"
	w.out.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			w.out.WriteByte('\\')
			w.out.WriteByte(c)
		case c == '\n':
			w.out.WriteString(`\n`)
		case c == '\r':
			w.out.WriteString(`\r`)
		case c == '\t':
			w.out.WriteString(`\t`)
		case c < 0x20:
			w.out.WriteString(`\u00`)
			w.out.WriteByte(hex[c>>4])
			w.out.WriteByte(hex[c&0xf])
		default:
			w.out.WriteByte(c)
		}
	}
	w.out.WriteByte('"')
}
