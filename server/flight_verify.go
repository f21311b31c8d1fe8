package server

import (
	"encoding/binary"
	"fmt"
)

// What arrow-go would allocate for a frame, bounded before it reads one.
// Its reader trusts the counts in a message: a schema header whose vector
// claims a billion fields, or whose fields list each other as children,
// and a compressed buffer that claims a terabyte uncompressed, are
// allocations (or a recursion) that end the process, not panics it
// recovers from. So the server walks a schema header the way arrow-go
// will (every table, vector and string in bounds, at most
// maxSchemaFields fields, nested at most maxSchemaDepth deep) and sums a
// compressed batch's claimed sizes first.

const (
	// maxSchemaFields bounds the fields of a schema, nested ones included
	// (the widest Unity Catalog tables have a few thousand columns).
	maxSchemaFields = 10000
	// maxSchemaDepth bounds how deep fields nest.
	maxSchemaDepth = 64
	// MaxArrowDecodedBytes bounds the uncompressed size of one compressed
	// frame's buffers: 64 MiB.
	MaxArrowDecodedBytes = 64 << 20
)

// Schema.fbs: the Type union's members whose tables hold a vector or a
// string.
const (
	fbTypeTimestamp = 10 // Timestamp.timezone, a string (field 1)
	fbTypeUnion     = 14 // Union.typeIds, a vector of int (field 1)
)

// schemaWalk counts the fields seen while verifying a schema header.
type schemaWalk struct{ fields int }

// verifySchemaHeader checks that every table, vector and string arrow-go
// reads from a schema message header lies in it, within the bounds above.
func verifySchemaHeader(b []byte) error {
	msg, err := fbRoot(b)
	if err != nil {
		return err
	}
	pos, ok, err := msg.ref(2) // header: Schema
	if err != nil || !ok {
		return errBadHeader
	}
	schema, err := fbTableAt(b, pos)
	if err != nil {
		return err
	}
	if err := verifyKeyValues(msg, 4); err != nil { // Message.custom_metadata
		return err
	}
	if _, err := schema.vectorLen(3, 8); err != nil { // features: [long]
		return err
	}
	if err := verifyKeyValues(schema, 2); err != nil { // custom_metadata
		return err
	}
	var w schemaWalk
	return w.fieldVector(schema, 1, 0) // fields
}

// tables returns the tables of vector field i of t.
func (t fbTable) tables(i int) ([]fbTable, error) {
	n, err := t.vectorLen(i, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	p, _, _ := t.ref(i)
	out := make([]fbTable, n)
	for k := range out {
		at := p + 4 + 4*k
		off, _ := le32(t.b, at)
		if out[k], err = fbTableAt(t.b, at+int(off)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// verifyString checks string field i of t (absent is fine).
func verifyString(t fbTable, i int) error {
	_, err := t.vectorLen(i, 1)
	return err
}

// verifyKeyValues checks a vector of KeyValue tables (key, value strings).
func verifyKeyValues(t fbTable, i int) error {
	kvs, err := t.tables(i)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if err := verifyString(kv, 0); err != nil {
			return err
		}
		if err := verifyString(kv, 1); err != nil {
			return err
		}
	}
	return nil
}

// fieldVector checks vector field i of t, of Field tables, at depth.
func (w *schemaWalk) fieldVector(t fbTable, i, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("the schema nests fields more than %d deep", maxSchemaDepth)
	}
	fields, err := t.tables(i)
	if err != nil {
		return err
	}
	if w.fields += len(fields); w.fields > maxSchemaFields {
		return fmt.Errorf("the schema has more than %d fields", maxSchemaFields)
	}
	for _, f := range fields {
		if err := w.field(f, depth); err != nil {
			return err
		}
	}
	return nil
}

// field checks one Field table: name, type, dictionary, children,
// custom_metadata.
func (w *schemaWalk) field(f fbTable, depth int) error {
	if err := verifyString(f, 0); err != nil {
		return err
	}
	typ, err := f.uint8At(2)
	if err != nil {
		return err
	}
	if p, ok, err := f.ref(3); err != nil {
		return err
	} else if ok {
		tt, err := fbTableAt(f.b, p)
		if err != nil {
			return err
		}
		switch typ {
		case fbTypeTimestamp:
			err = verifyString(tt, 1)
		case fbTypeUnion:
			_, err = tt.vectorLen(1, 4)
		}
		if err != nil {
			return err
		}
	}
	if p, ok, err := f.ref(4); err != nil { // dictionary: DictionaryEncoding
		return err
	} else if ok {
		d, err := fbTableAt(f.b, p)
		if err != nil {
			return err
		}
		if p, ok, err := d.ref(1); err != nil { // indexType: Int
			return err
		} else if ok {
			if _, err := fbTableAt(f.b, p); err != nil {
				return err
			}
		}
	}
	if err := verifyKeyValues(f, 6); err != nil {
		return err
	}
	return w.fieldVector(f, 5, depth+1) // children
}

// verifyCompressed checks a compressed record batch's buffers: each in
// the body, and their claimed uncompressed sizes (the 8-byte prefix of
// each, -1 for a buffer sent uncompressed) within MaxArrowDecodedBytes in
// all.
func verifyCompressed(header, body []byte) error {
	msg, err := fbRoot(header)
	if err != nil {
		return err
	}
	pos, _, err := msg.ref(2)
	if err != nil {
		return err
	}
	rb, err := fbTableAt(header, pos)
	if err != nil {
		return err
	}
	n, err := rb.vectorLen(2, 16)
	if err != nil || n == 0 {
		return err
	}
	p, _, _ := rb.ref(2)
	var total int64
	for k := range n {
		at := p + 4 + 16*k // Buffer: offset, length (longs)
		off := int64(binary.LittleEndian.Uint64(header[at:]))
		length := int64(binary.LittleEndian.Uint64(header[at+8:]))
		if off < 0 || length < 0 || off > int64(len(body)) || length > int64(len(body))-off {
			return fmt.Errorf("buffer %d lies outside the %d-byte body", k, len(body))
		}
		if length == 0 {
			continue
		}
		if length < 8 {
			return fmt.Errorf("compressed buffer %d has no length prefix", k)
		}
		size := int64(binary.LittleEndian.Uint64(body[off:]))
		if size == -1 {
			continue
		}
		if size < 0 || size > MaxArrowDecodedBytes-total {
			return fmt.Errorf("the compressed buffers claim more than %d bytes uncompressed", MaxArrowDecodedBytes)
		}
		total += size
	}
	return nil
}
