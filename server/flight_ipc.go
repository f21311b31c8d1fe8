package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// An Arrow stream's frames, read with arrow-go under the stream's schema,
// and kept as encapsulated IPC messages (the IPC stream format's unit:
// continuation marker, header length, header, padding, body), so that the
// schema message followed by the stored frames is an IPC stream any Arrow
// reader takes (DecodeArrow).

// ipcContinuation starts every encapsulated message (format version 0.15
// and later).
const ipcContinuation = 0xFFFFFFFF

// encapsulate returns header and body as one encapsulated IPC message,
// the header padded so that the body starts on an 8-byte boundary.
func encapsulate(header, body []byte) []byte {
	padded := (len(header) + 7) &^ 7
	out := make([]byte, 8+padded+len(body))
	binary.LittleEndian.PutUint32(out, ipcContinuation)
	binary.LittleEndian.PutUint32(out[4:], uint32(padded))
	copy(out[8:], header)
	copy(out[8+padded:], body)
	return out
}

// ipcEOS ends an IPC stream: a continuation marker and a zero length.
var ipcEOS = []byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}

// frameSource hands arrow-go's reader one message at a time: the one the
// server put there, then io.EOF.
type frameSource struct {
	next, cur *ipc.Message
}

// Message implements ipc.MessageReader.
func (f *frameSource) Message() (*ipc.Message, error) {
	if f.cur != nil {
		f.cur.Release()
		f.cur = nil
	}
	if f.next == nil {
		return nil, io.EOF
	}
	f.cur, f.next = f.next, nil
	return f.cur, nil
}

// Retain implements ipc.MessageReader; the source lives as long as its
// decoder.
func (f *frameSource) Retain() {}

// Release implements ipc.MessageReader.
func (f *frameSource) Release() {}

// errNotRecordBatch and friends say why a frame did not decode; they reach
// the client as INVALID_ARGUMENT.
var (
	errNotRecordBatch = errors.New("the IPC message is not a record batch")
	errWrongLayout    = errors.New("the record batch does not have the stream's schema")
)

// frameDecoder reads a stream's record batches under its schema.
type frameDecoder struct {
	schema *arrow.Schema
	layout ipcLayout
	src    *frameSource
	rd     *ipc.Reader
}

// newFrameDecoder reads the schema message header (of a frame with no
// body) and returns a decoder for the stream's batches.
func newFrameDecoder(header []byte) (d *frameDecoder, err error) {
	h, err := peekHeader(header)
	if err != nil {
		return nil, err
	}
	if h.typ != ipcSchema {
		return nil, fmt.Errorf("the first frame's IPC message is not a schema (header type %d)", h.typ)
	}
	if h.bodyLen != 0 {
		return nil, errors.New("the schema message announces a body")
	}
	if err := verifySchemaHeader(header); err != nil {
		return nil, err
	}
	d = &frameDecoder{src: &frameSource{}}
	d.src.next = ipc.NewMessage(memory.NewBufferBytes(header), memory.NewBufferBytes(nil))
	d.rd, err = ipc.NewReaderFromMessageReader(d.src, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("the schema does not decode: %w", err)
	}
	d.schema = d.rd.Schema()
	if d.layout, err = schemaLayout(d.schema); err != nil {
		d.rd.Release()
		return nil, err
	}
	return d, nil
}

// decode reads one frame's record batch and returns its rows. The batch
// is checked against the schema's layout first (peekHeader), then decoded
// by arrow-go, whose panics on inconsistent buffers are its errors.
func (d *frameDecoder) decode(header, body []byte) (rows int64, err error) {
	h, err := peekHeader(header)
	if err != nil {
		return 0, err
	}
	switch {
	case h.typ != ipcRecordBatch:
		return 0, fmt.Errorf("%w (header type %d)", errNotRecordBatch, h.typ)
	case h.bodyLen != int64(len(body)):
		return 0, fmt.Errorf("the record batch announces a %d-byte body and carries %d bytes", h.bodyLen, len(body))
	case h.nodes != d.layout.nodes:
		return 0, fmt.Errorf("%w: %d field nodes, the schema has %d", errWrongLayout, h.nodes, d.layout.nodes)
	case d.layout.known && h.buffers != d.layout.buffers:
		return 0, fmt.Errorf("%w: %d buffers, the schema's batches have %d", errWrongLayout, h.buffers, d.layout.buffers)
	}
	if h.compress {
		if err := verifyCompressed(header, body); err != nil {
			return 0, err
		}
	}
	d.src.next = ipc.NewMessage(memory.NewBufferBytes(header), memory.NewBufferBytes(body))
	if !d.rd.Next() {
		err := d.rd.Err()
		if err == nil {
			err = errNotRecordBatch
		}
		d.src.next = nil // arrow-go's reader stops for good after an error; the call ends
		return 0, fmt.Errorf("the record batch does not decode: %w", err)
	}
	return d.rd.RecordBatch().NumRows(), nil
}

// close releases the decoder.
func (d *frameDecoder) close() {
	if d.rd != nil {
		d.rd.Release()
		d.rd = nil
	}
}
