package server

import (
	"encoding/binary"
	"errors"
)

// A bounds-checked look into an Arrow IPC message header (a flatbuffer,
// Message.fbs), for what the server checks before arrow-go reads a frame:
// the message type, the body length, and a record batch's node and buffer
// counts. arrow-go's own accessors panic on a truncated or hostile header
// and keep the counts internal; every read here is checked instead, so a
// bad header is an error, never a panic.

var errBadHeader = errors.New("the IPC message header is not a valid flatbuffer Message")

// IPC message header types (Message.fbs, MessageHeader).
const (
	ipcSchema          = 1
	ipcDictionaryBatch = 2
	ipcRecordBatch     = 3
)

// fbTable is one flatbuffer table: the buffer and the table's position.
type fbTable struct {
	b   []byte
	pos int
	vt  int // the table's vtable position
	vtn int // the vtable's length in bytes
}

func le32(b []byte, at int) (uint32, bool) {
	if at < 0 || at > len(b)-4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[at:]), true
}

func le16(b []byte, at int) (uint16, bool) {
	if at < 0 || at > len(b)-2 {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b[at:]), true
}

// fbTableAt reads the table at pos.
func fbTableAt(b []byte, pos int) (fbTable, error) {
	soff, ok := le32(b, pos)
	if !ok {
		return fbTable{}, errBadHeader
	}
	vt := pos - int(int32(soff))
	vtn, ok := le16(b, vt)
	if !ok || vtn < 4 || vt+int(vtn) > len(b) {
		return fbTable{}, errBadHeader
	}
	return fbTable{b: b, pos: pos, vt: vt, vtn: int(vtn)}, nil
}

// fbRoot reads the root table of buffer b.
func fbRoot(b []byte) (fbTable, error) {
	off, ok := le32(b, 0)
	if !ok {
		return fbTable{}, errBadHeader
	}
	return fbTableAt(b, int(off))
}

// field returns the position of field i, or false when it is absent
// (holding its default).
func (t fbTable) field(i int) (int, bool, error) {
	slot := 4 + 2*i
	if slot >= t.vtn { // as flatbuffers decides: a slot half past the vtable is read
		return 0, false, nil
	}
	fo, ok := le16(t.b, t.vt+slot)
	if !ok {
		return 0, false, errBadHeader
	}
	if fo == 0 {
		return 0, false, nil
	}
	p := t.pos + int(fo)
	if p >= len(t.b) {
		return 0, false, errBadHeader
	}
	return p, true, nil
}

// uint8At returns scalar field i as a byte (0 when absent).
func (t fbTable) uint8At(i int) (uint8, error) {
	p, ok, err := t.field(i)
	if !ok || err != nil {
		return 0, err
	}
	return t.b[p], nil
}

// int64At returns scalar field i as an int64 (0 when absent).
func (t fbTable) int64At(i int) (int64, error) {
	p, ok, err := t.field(i)
	if !ok || err != nil {
		return 0, err
	}
	if p > len(t.b)-8 {
		return 0, errBadHeader
	}
	return int64(binary.LittleEndian.Uint64(t.b[p:])), nil
}

// ref returns the position that reference field i (a table, a union
// value or a vector) points at.
func (t fbTable) ref(i int) (int, bool, error) {
	p, ok, err := t.field(i)
	if !ok || err != nil {
		return 0, ok, err
	}
	off, okr := le32(t.b, p)
	if !okr {
		return 0, false, errBadHeader
	}
	return p + int(off), true, nil
}

// vectorLen returns the length of vector field i whose elements are elem
// bytes each, checking that they lie in the buffer (0 when absent).
func (t fbTable) vectorLen(i, elem int) (int, error) {
	p, ok, err := t.ref(i)
	if !ok || err != nil {
		return 0, err
	}
	n, okn := le32(t.b, p)
	if !okn || int64(n)*int64(elem) > int64(len(t.b)-p-4) {
		return 0, errBadHeader
	}
	return int(n), nil
}

// ipcHeader is what the server reads from a message header itself.
type ipcHeader struct {
	typ      uint8 // ipcSchema, ipcRecordBatch...
	bodyLen  int64
	length   int64 // record batch: its rows
	nodes    int   // record batch: field nodes
	buffers  int   // record batch: buffers
	compress bool  // record batch: its body is compressed
}

// peekHeader reads a message header's type and body length and, for a
// record batch, its row, node and buffer counts.
func peekHeader(b []byte) (ipcHeader, error) {
	msg, err := fbRoot(b)
	if err != nil {
		return ipcHeader{}, err
	}
	var h ipcHeader
	if h.typ, err = msg.uint8At(1); err != nil { // header_type
		return ipcHeader{}, err
	}
	if h.bodyLen, err = msg.int64At(3); err != nil { // bodyLength
		return ipcHeader{}, err
	}
	if h.bodyLen < 0 {
		return ipcHeader{}, errBadHeader
	}
	if h.typ != ipcRecordBatch {
		return h, nil
	}
	pos, ok, err := msg.ref(2) // header
	if err != nil || !ok {
		return ipcHeader{}, errBadHeader
	}
	rb, err := fbTableAt(b, pos)
	if err != nil {
		return ipcHeader{}, err
	}
	if h.length, err = rb.int64At(0); err != nil {
		return ipcHeader{}, err
	}
	if h.nodes, err = rb.vectorLen(1, 16); err != nil { // FieldNode: two longs
		return ipcHeader{}, err
	}
	if h.buffers, err = rb.vectorLen(2, 16); err != nil { // Buffer: two longs
		return ipcHeader{}, err
	}
	_, h.compress, err = rb.field(3)
	if err != nil {
		return ipcHeader{}, err
	}
	if h.length < 0 {
		return ipcHeader{}, errBadHeader
	}
	return h, nil
}
