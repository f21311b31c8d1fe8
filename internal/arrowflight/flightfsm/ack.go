package flightfsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// ReadyOffset is the ack_up_to_offset of the ready signal and of a
// close-only rotation notice: no frame acknowledged.
const ReadyOffset = -1

// Ack is one PutResult's app_metadata, parsed (docs/protocol.md §12.4).
type Ack struct {
	// Offset is the highest durable frame of the connection
	// (ack_up_to_offset), ReadyOffset for none.
	Offset int64
	// Rows is the number of rows durable on the connection in all
	// (ack_up_to_records).
	Rows int64
	// Close is the rotation notice's grace (close_stream_duration_ms);
	// HasClose says it was present.
	Close    time.Duration
	HasClose bool
}

// The ack's field names.
const (
	fieldOffset = "ack_up_to_offset"
	fieldRows   = "ack_up_to_records"
	fieldClose  = "close_stream_duration_ms"
)

// ParseAck parses a PutResult's app_metadata strictly: one JSON object
// with ack_up_to_offset (an integer >= -1) and ack_up_to_records (an
// integer >= 0), and optionally close_stream_duration_ms (an integer >= 0
// in milliseconds, or null for absent, as some encoders write an absent
// optional field). A missing, null, duplicate or mistyped field, and any
// byte after the object, is an error; unknown fields are ignored, so that
// a server may add some. The error is a *ProtocolError (MalformedAck).
func ParseAck(b []byte) (Ack, error) {
	var a Ack
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return Ack{}, malformed("%v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Ack{}, malformed("%v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return Ack{}, malformed("a field name is not a string")
		}
		if seen[name] {
			return Ack{}, malformed("field %q appears twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Ack{}, malformed("field %q: %v", name, err)
		}
		switch name {
		case fieldOffset:
			a.Offset, err = integer(raw, ReadyOffset)
		case fieldRows:
			a.Rows, err = integer(raw, 0)
		case fieldClose:
			if string(raw) == "null" {
				seen[name] = false
				continue
			}
			var ms int64
			ms, err = integer(raw, 0)
			if err == nil && ms > math.MaxInt64/int64(time.Millisecond) {
				err = errors.New("too large for a duration")
			}
			a.Close, a.HasClose = time.Duration(ms)*time.Millisecond, true
		}
		if err != nil {
			return Ack{}, malformed("field %q: %v", name, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return Ack{}, malformed("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Ack{}, malformed("bytes after the object")
	}
	for _, f := range []string{fieldOffset, fieldRows} {
		if !seen[f] {
			return Ack{}, malformed("field %q is missing", f)
		}
	}
	return a, nil
}

// expectDelim reads the next token and checks that it is d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err == io.EOF {
		return errors.New("not a JSON object")
	}
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %q, got %v", d, tok)
	}
	return nil
}

// integer decodes a JSON integer that is at least lowest: a string, a
// fraction, an exponent or null is refused, since a server that writes
// them is not speaking the protocol.
func integer(raw json.RawMessage, lowest int64) (int64, error) {
	s := string(raw)
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, fmt.Errorf("%s is not an integer", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not a 64-bit integer", s)
	}
	if n < lowest {
		return 0, fmt.Errorf("%d is below %d", n, lowest)
	}
	return n, nil
}

func malformed(format string, args ...any) error {
	return &ProtocolError{Rule: MalformedAck, Detail: fmt.Sprintf(format, args...)}
}
