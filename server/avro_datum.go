package server

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
)

// An Avro datum is checked by walking it with its writer schema, compiled
// once per stream into avroNodes: a datum must decode completely, with no
// byte left over (the Avro specification's binary encoding). The walk
// reads nothing into values and allocates nothing unless it fails, and a
// hostile datum cannot make it work much longer than the datum is long: a
// block's item count is bounded by the bytes left, items that take no
// bytes are not walked, and nesting is bounded by maxAvroDepth.

// maxAvroDepth bounds the nesting of records, unions, arrays and maps in a
// datum (a recursive schema allows any), as protobuf bounds a message's.
const maxAvroDepth = 10000

type avroKind uint8

const (
	avroNull avroKind = iota
	avroBoolean
	avroInt
	avroLong
	avroFloat
	avroDouble
	avroBytes
	avroString
	avroFixed
	avroEnum
	avroRecord
	avroArray
	avroMap
	avroUnion
)

// avroNode is one type of a compiled writer schema.
type avroNode struct {
	kind     avroKind
	name     string      // record, enum, fixed: the full name
	fields   []avroField // record: its fields, once compiled those that take bytes
	items    *avroNode   // array: the items; map: the values
	branches []*avroNode // union
	n        int         // enum: its symbols; fixed: its size
	empty    bool        // encoded as no bytes at all: null, fixed of 0, records of such
}

type avroField struct {
	name string
	typ  *avroNode
}

// compileAvro compiles a parsed record schema. A record that contains
// itself with no union, array or map between has no finite datum and is
// refused.
func compileAvro(s avro.Schema) (*avroNode, error) {
	c := avroCompiler{named: map[string]*avroNode{}}
	root, err := c.node(s)
	if err != nil {
		return nil, err
	}
	state := map[*avroNode]uint8{}
	for _, r := range c.records {
		if err := markEmpty(r, state); err != nil {
			return nil, err
		}
	}
	for _, r := range c.records {
		r.fields = slices.DeleteFunc(r.fields, func(f avroField) bool { return f.typ.empty })
	}
	return root, nil
}

type avroCompiler struct {
	named   map[string]*avroNode // records by full name: references and recursion
	records []*avroNode
}

func (c *avroCompiler) node(s avro.Schema) (*avroNode, error) {
	switch s := s.(type) {
	case *avro.RefSchema:
		return c.node(s.Schema())
	case *avro.RecordSchema:
		if n, ok := c.named[s.FullName()]; ok {
			return n, nil
		}
		n := &avroNode{kind: avroRecord, name: s.FullName()}
		c.named[n.name] = n
		c.records = append(c.records, n)
		for _, f := range s.Fields() {
			t, err := c.node(f.Type())
			if err != nil {
				return nil, err
			}
			n.fields = append(n.fields, avroField{name: f.Name(), typ: t})
		}
		return n, nil
	case *avro.EnumSchema:
		return &avroNode{kind: avroEnum, name: s.FullName(), n: len(s.Symbols())}, nil
	case *avro.FixedSchema:
		return &avroNode{kind: avroFixed, name: s.FullName(), n: s.Size(), empty: s.Size() == 0}, nil
	case *avro.ArraySchema:
		items, err := c.node(s.Items())
		return &avroNode{kind: avroArray, items: items}, err
	case *avro.MapSchema:
		values, err := c.node(s.Values())
		return &avroNode{kind: avroMap, items: values}, err
	case *avro.UnionSchema:
		n := &avroNode{kind: avroUnion}
		for _, t := range s.Types() {
			b, err := c.node(t)
			if err != nil {
				return nil, err
			}
			n.branches = append(n.branches, b)
		}
		return n, nil
	case *avro.NullSchema:
		return &avroNode{kind: avroNull, empty: true}, nil
	case *avro.PrimitiveSchema:
		if k, ok := primitiveKinds[s.Type()]; ok {
			return &avroNode{kind: k}, nil
		}
	}
	return nil, fmt.Errorf("unsupported Avro type %q", s.Type())
}

var primitiveKinds = map[avro.Type]avroKind{
	avro.Null: avroNull, avro.Boolean: avroBoolean, avro.Int: avroInt, avro.Long: avroLong,
	avro.Float: avroFloat, avro.Double: avroDouble, avro.Bytes: avroBytes, avro.String: avroString,
}

// markEmpty sets the empty flag of record r and of the records it holds
// directly (not through a union, array or map, which take at least a
// byte), and refuses a record that holds itself that way.
func markEmpty(r *avroNode, state map[*avroNode]uint8) error {
	switch state[r] {
	case 1:
		return fmt.Errorf("record %s contains itself with no union, array or map between, so none of its datums is finite", r.name)
	case 2:
		return nil
	}
	state[r] = 1
	empty := true
	for _, f := range r.fields {
		if f.typ.kind == avroRecord {
			if err := markEmpty(f.typ, state); err != nil {
				return err
			}
		}
		empty = empty && f.typ.empty
	}
	r.empty, state[r] = empty, 2
	return nil
}

// check reports whether rec is one complete datum of the writer schema.
func (c *avroChecker) check(rec []byte) error {
	r := avroReader{b: rec}
	if err := r.value(c.root, 0); err != nil {
		return err
	}
	if left := len(rec) - r.pos; left > 0 {
		return r.fail(r.pos, "%d bytes left over after the datum", left)
	}
	return nil
}

// datumError is why a datum does not decode: what failed, at which byte,
// in which field.
type datumError struct {
	msg  string
	at   int
	path []string // innermost first: field names, "[3]" for an item
}

func (e *datumError) Error() string {
	if len(e.path) == 0 {
		return fmt.Sprintf("%s (byte %d)", e.msg, e.at)
	}
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		if p := e.path[i]; b.Len() > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(e.path[i])
	}
	return fmt.Sprintf("%s (byte %d, field %s)", e.msg, e.at, b.String())
}

func (e *datumError) in(seg string) *datumError {
	e.path = append(e.path, seg)
	return e
}

// avroReader walks one datum.
type avroReader struct {
	b   []byte
	pos int
}

func (r *avroReader) fail(at int, format string, a ...any) *datumError {
	return &datumError{msg: fmt.Sprintf(format, a...), at: at}
}

func (r *avroReader) value(n *avroNode, depth int) *datumError {
	switch n.kind {
	case avroNull:
		return nil
	case avroBoolean:
		if r.pos == len(r.b) {
			return r.fail(r.pos, "datum ends where a boolean should be")
		}
		if v := r.b[r.pos]; v > 1 {
			return r.fail(r.pos, "boolean byte 0x%02x is neither 0 nor 1", v)
		}
		r.pos++
		return nil
	case avroInt:
		_, err := r.varint(true)
		return err
	case avroLong:
		_, err := r.varint(false)
		return err
	case avroFloat:
		return r.skip(4, "float")
	case avroDouble:
		return r.skip(8, "double")
	case avroFixed:
		return r.skip(n.n, "fixed")
	case avroBytes:
		_, err := r.bytes(false)
		return err
	case avroString:
		_, err := r.bytes(true)
		return err
	case avroEnum:
		at := r.pos
		i, err := r.varint(true)
		if err == nil && (i < 0 || i >= int64(n.n)) {
			err = r.fail(at, "enum %s has no symbol %d (it has %d)", n.name, i, n.n)
		}
		return err
	}
	if depth >= maxAvroDepth {
		return r.fail(r.pos, "datum nested deeper than %d levels", maxAvroDepth)
	}
	switch n.kind {
	case avroUnion:
		at := r.pos
		i, err := r.varint(false)
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(n.branches)) {
			return r.fail(at, "union has no branch %d (it has %d)", i, len(n.branches))
		}
		return r.value(n.branches[i], depth+1)
	case avroRecord:
		for _, f := range n.fields {
			if err := r.value(f.typ, depth+1); err != nil {
				return err.in(f.name)
			}
		}
		return nil
	default: // avroArray, avroMap
		return r.blocks(n, depth)
	}
}

// blocks walks the blocks of an array or map: each a count (negative: its
// absolute value, followed by the block's size in bytes), then its items;
// a count of 0 ends them.
func (r *avroReader) blocks(n *avroNode, depth int) *datumError {
	isMap := n.kind == avroMap
	idx := int64(0)
	for {
		at := r.pos
		count, err := r.varint(false)
		if err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		size := int64(-1)
		if count < 0 {
			if count == math.MinInt64 {
				return r.fail(at, "block count %d is out of range", count)
			}
			count = -count
			sizeAt := r.pos
			if size, err = r.varint(false); err != nil {
				return err
			}
			if size < 0 {
				return r.fail(sizeAt, "negative block size %d", size)
			}
		}
		body := r.pos
		if isMap || !n.items.empty {
			// Every item takes a byte at least.
			if left := len(r.b) - r.pos; count > int64(left) {
				return r.fail(at, "datum ends inside a block of %d items: %d bytes left", count, left)
			}
			for range count {
				var key []byte
				if isMap {
					if key, err = r.bytes(true); err != nil {
						return err.in(fmt.Sprintf("[key %d]", idx))
					}
				}
				if err := r.value(n.items, depth+1); err != nil {
					if isMap {
						return err.in(fmt.Sprintf("[%q]", clip(string(key))))
					}
					return err.in(fmt.Sprintf("[%d]", idx))
				}
				idx++
			}
		} else {
			idx += count // items of no bytes: nothing to read
		}
		if size >= 0 && int64(r.pos-body) != size {
			return r.fail(body, "block size %d, but its items take %d bytes", size, r.pos-body)
		}
	}
}

// varint reads a zig-zag varint: an int (at most 5 bytes, 32 bits) or a
// long (at most 10 bytes, 64 bits).
func (r *avroReader) varint(isInt bool) (int64, *datumError) {
	what, bits, maxLen, lastMax := "long", 64, 10, byte(0x01)
	if isInt {
		what, bits, maxLen, lastMax = "int", 32, 5, 0x0f
	}
	at := r.pos
	var v uint64
	for i := range maxLen {
		if r.pos == len(r.b) {
			return 0, r.fail(at, "datum ends inside a %s", what)
		}
		c := r.b[r.pos]
		r.pos++
		if i == maxLen-1 && c > lastMax {
			return 0, r.fail(at, "%s does not fit in %d bits", what, bits)
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(v>>1) ^ -int64(v&1), nil
		}
	}
	return 0, r.fail(at, "%s does not fit in %d bits", what, bits) // not reached: the last byte ends it
}

// skip steps over n bytes of a fixed-size value.
func (r *avroReader) skip(n int, what string) *datumError {
	if left := len(r.b) - r.pos; n > left {
		return r.fail(r.pos, "datum ends inside a %s of %d bytes: %d left", what, n, left)
	}
	r.pos += n
	return nil
}

// bytes reads a length and that many bytes: a string's must be UTF-8.
func (r *avroReader) bytes(isString bool) ([]byte, *datumError) {
	what := "bytes"
	if isString {
		what = "string"
	}
	at := r.pos
	n, err := r.varint(false)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, r.fail(at, "negative %s length %d", what, n)
	}
	if left := len(r.b) - r.pos; n > int64(left) {
		return nil, r.fail(at, "datum ends inside a %s of %d bytes: %d left", what, n, left)
	}
	v := r.b[r.pos : r.pos+int(n)]
	if isString && !utf8.Valid(v) {
		return nil, r.fail(at, "string is not valid UTF-8")
	}
	r.pos += int(n)
	return v, nil
}
