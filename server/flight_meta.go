package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The JSON an Arrow stream carries in app_metadata: {"offset_id":N} on
// each data frame, {"ack_up_to_offset":F,"ack_up_to_records":R} on each
// PutResult (-1 and 0: the ready signal; with close_stream_duration_ms, a
// close-only rotation notice).

// errOffsetMeta is wrapped by every refusal of a frame's app_metadata.
var errOffsetMeta = errors.New(`app_metadata must be the JSON object {"offset_id":N}`)

// parseOffsetMeta returns the offset_id of a data frame's app_metadata,
// read strictly: one JSON object, offset_id present once, a non-negative
// integer (not null, not a string, not 1.0); other fields are ignored, so
// that a client may add some; nothing may follow the object. A lenient
// read would take {} for offset 0.
func parseOffsetMeta(b []byte) (int64, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return 0, fmt.Errorf("%w: it is empty", errOffsetMeta)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, fmt.Errorf("%w: not a JSON object", errOffsetMeta)
	}
	off, seen := int64(0), false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, fmt.Errorf("%w: %v", errOffsetMeta, err)
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, fmt.Errorf("%w: %v", errOffsetMeta, err)
		}
		if key != "offset_id" {
			continue
		}
		if seen {
			return 0, fmt.Errorf("%w: offset_id appears twice", errOffsetMeta)
		}
		seen = true
		if off, err = strconv.ParseInt(string(raw), 10, 64); err != nil || off < 0 {
			return 0, fmt.Errorf("%w: offset_id is %s, not a non-negative integer", errOffsetMeta, clip(string(raw)))
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, fmt.Errorf("%w: %v", errOffsetMeta, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, fmt.Errorf("%w: data after the object", errOffsetMeta)
	}
	if !seen {
		return 0, fmt.Errorf("%w: offset_id is missing", errOffsetMeta)
	}
	return off, nil
}

// arrowAck is a PutResult's app_metadata: durable through frame offset,
// rows in all on the connection; offset -1 with rows 0 is the ready
// signal.
func arrowAck(offset, rows int64) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"ack_up_to_offset":`...)
	b = strconv.AppendInt(b, offset, 10)
	b = append(b, `,"ack_up_to_records":`...)
	b = strconv.AppendInt(b, rows, 10)
	return append(b, '}')
}

// arrowCloseOnly is a close-only rotation notice's app_metadata: nothing
// acknowledged, leave within d (whole milliseconds, rounded down).
func arrowCloseOnly(d time.Duration) []byte {
	b := arrowAck(-1, 0)
	b = append(b[:len(b)-1], `,"close_stream_duration_ms":`...)
	b = strconv.AppendInt(b, d.Milliseconds(), 10)
	return append(b, '}')
}
