package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"
)

// avroCodec turns JSON lines into Avro binary datums of one writer schema
// (-avro-schema): the line is read as JSON and each value is converted to
// what the schema's type takes, so that a line that does not fit is
// refused with the field that does not, before anything is sent.
type avroCodec struct {
	path   string      // the .avsc file
	text   string      // the schema as the file has it: sent at create
	sha256 string      // of text: pinned in the state file
	schema avro.Schema // parsed
}

// loadAvroSchema reads and parses an Avro record schema.
func loadAvroSchema(path string) (*avroCodec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, inputErr("-avro-schema: %v", err)
	}
	s, err := avro.ParseBytes(b)
	if err != nil {
		return nil, inputErr("-avro-schema %s: not an Avro schema: %v", path, err)
	}
	if s.Type() != avro.Record {
		return nil, inputErr("-avro-schema %s: a %s schema; a table's records need a record schema", path, s.Type())
	}
	sum := sha256.Sum256(b)
	return &avroCodec{path: path, text: string(b), sha256: hex.EncodeToString(sum[:]), schema: s}, nil
}

// encode converts a JSON line (already checked to be one JSON object) into
// a datum, or says why it does not fit the schema.
func (c *avroCodec) encode(line []byte) ([]byte, string) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err.Error()
	}
	native, err := toAvro(c.schema, v, "")
	if err != nil {
		return nil, "does not fit the Avro schema: " + err.Error()
	}
	b, err := avro.Marshal(c.schema, native)
	if err != nil {
		return nil, "does not fit the Avro schema: " + err.Error()
	}
	return b, ""
}

// toAvro converts v, a value decoded from JSON with UseNumber, into the Go
// value the Avro encoder takes for schema s. path names v for errors.
func toAvro(s avro.Schema, v any, path string) (any, error) {
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	where := path
	if where == "" {
		where = "the record"
	}
	switch s := s.(type) {
	case *avro.RecordSchema:
		return recordToAvro(s, v, path)
	case *avro.UnionSchema:
		return unionToAvro(s, v, path)
	case *avro.ArraySchema:
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an array, got %s", where, jsonKind(v))
		}
		out := make([]any, len(items))
		for i, it := range items {
			var err error
			if out[i], err = toAvro(s.Items(), it, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: want an object (an Avro map), got %s", where, jsonKind(v))
		}
		out := make(map[string]any, len(m))
		for k, it := range m {
			var err error
			if out[k], err = toAvro(s.Values(), it, join(path, k)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *avro.EnumSchema:
		sym, ok := v.(string)
		if !ok || !slices.Contains(s.Symbols(), sym) {
			return nil, fmt.Errorf("%s: want one of %v, got %s", where, s.Symbols(), jsonText(v))
		}
		return sym, nil
	case *avro.FixedSchema:
		str, ok := v.(string)
		if !ok || len(str) != s.Size() {
			return nil, fmt.Errorf("%s: want a string of %d bytes (fixed %s), got %s", where, s.Size(), s.FullName(), jsonText(v))
		}
		// The encoder takes a fixed as an array of its size.
		arr := reflect.New(reflect.ArrayOf(s.Size(), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(arr, reflect.ValueOf([]byte(str)))
		return arr.Interface(), nil
	case *avro.PrimitiveSchema:
		return primitiveToAvro(s.Type(), v, where)
	}
	return nil, fmt.Errorf("%s: the schema's type %s is not supported by -avro-schema", where, s.Type())
}

func recordToAvro(s *avro.RecordSchema, v any, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want an object (record %s), got %s", orRecord(path), s.FullName(), jsonKind(v))
	}
	out := make(map[string]any, len(s.Fields()))
	for _, f := range s.Fields() {
		fv, present := m[f.Name()]
		switch {
		case present:
			var err error
			if out[f.Name()], err = toAvro(f.Type(), fv, join(path, f.Name())); err != nil {
				return nil, err
			}
		case f.HasDefault():
			out[f.Name()] = f.Default()
		case nullable(f.Type()):
			out[f.Name()] = nil
		default:
			return nil, fmt.Errorf("%s: missing, and the schema gives it no default", join(path, f.Name()))
		}
	}
	for k := range m {
		if slices.IndexFunc(s.Fields(), func(f *avro.Field) bool { return f.Name() == k }) < 0 {
			return nil, fmt.Errorf("%s: not a field of record %s (the datum would drop it)", join(path, k), s.FullName())
		}
	}
	return out, nil
}

// unionToAvro picks the union's branch for v: null for JSON null, the
// branch an Avro-JSON wrapper names ({"string": "x"}), else the first
// branch v converts to. The encoder takes a branch as {name: value}.
func unionToAvro(s *avro.UnionSchema, v any, path string) (any, error) {
	if v == nil {
		if nullable(s) {
			return nil, nil
		}
		return nil, fmt.Errorf("%s: null, but the union %s has no null", orRecord(path), unionNames(s))
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for name, inner := range m {
			if b := unionBranch(s, name); b != nil {
				nv, err := toAvro(b, inner, path)
				if err != nil {
					return nil, err
				}
				return map[string]any{name: nv}, nil
			}
		}
	}
	var errs []string
	for _, b := range s.Types() {
		if b.Type() == avro.Null {
			continue
		}
		nv, err := toAvro(b, v, path)
		if err == nil {
			return map[string]any{branchName(b): nv}, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, fmt.Errorf("%s: fits no branch of the union %s (%s)", orRecord(path), unionNames(s), strings.Join(errs, "; "))
}

func primitiveToAvro(t avro.Type, v any, where string) (any, error) {
	bad := func(want string) error { return fmt.Errorf("%s: want %s, got %s", where, want, jsonText(v)) }
	switch t {
	case avro.Null:
		if v != nil {
			return nil, bad("null")
		}
		return nil, nil
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, bad("a boolean")
		}
		return b, nil
	case avro.String:
		str, ok := v.(string)
		if !ok {
			return nil, bad("a string")
		}
		return str, nil
	case avro.Bytes:
		str, ok := v.(string)
		if !ok {
			return nil, bad("a string (bytes)")
		}
		return []byte(str), nil
	case avro.Int, avro.Long:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad("an integer")
		}
		i, err := n.Int64()
		if err != nil {
			return nil, bad("an integer")
		}
		if t == avro.Long {
			return i, nil
		}
		if i < math.MinInt32 || i > math.MaxInt32 {
			return nil, bad("an int (32 bits)")
		}
		return int32(i), nil
	case avro.Float, avro.Double:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad("a number")
		}
		f, err := n.Float64()
		if err != nil {
			return nil, bad("a number")
		}
		if t == avro.Float {
			return float32(f), nil
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: the schema's type %s is not supported by -avro-schema", where, t)
}

// nullable reports whether s is a union with a null branch.
func nullable(s avro.Schema) bool {
	u, ok := s.(*avro.UnionSchema)
	return ok && slices.ContainsFunc(u.Types(), func(b avro.Schema) bool { return b.Type() == avro.Null })
}

// branchName is how the encoder names a union's branch: a named type's
// full name, else its type.
func branchName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

func unionBranch(s *avro.UnionSchema, name string) avro.Schema {
	for _, b := range s.Types() {
		if branchName(b) == name {
			return b
		}
	}
	return nil
}

func unionNames(s *avro.UnionSchema) string {
	var names []string
	for _, b := range s.Types() {
		names = append(names, branchName(b))
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func join(path, name string) string {
	if path == "" {
		return "field " + name
	}
	return path + "." + name
}

func orRecord(path string) string {
	if path == "" {
		return "the record"
	}
	return path
}

// jsonKind names v's JSON type.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// jsonText shows v briefly.
func jsonText(v any) string {
	switch v.(type) {
	case []any, map[string]any:
		return jsonKind(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return jsonKind(v)
	}
	return preview(b)
}
