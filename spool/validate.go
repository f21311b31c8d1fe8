package spool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream"
)

// checkRecords refuses records the server would refuse for their content,
// before they reach the log. An entry is sent again at every Open until
// the server has it, so an entry the server refuses (INVALID_ARGUMENT, a
// non-retryable failure) would fail the stream at every Open: it must
// never be synced. The checks are the reference server's: a JSON record
// is one JSON object in valid UTF-8; a proto record decodes as the
// spool's message, with every required field and no unknown field.
func (s *Spool) checkRecords(records [][]byte) error {
	for i, r := range records {
		var reason string
		if m := s.opts.ProtoMessage; m != nil {
			msg := m.ProtoReflect().New()
			if err := proto.Unmarshal(r, msg.Interface()); err != nil {
				reason = err.Error()
			} else if len(msg.GetUnknown()) > 0 {
				reason = fmt.Sprintf("fields unknown to %s", msg.Descriptor().FullName())
			}
		} else {
			t := bytes.TrimLeft(r, " \t\r\n")
			switch {
			case len(t) == 0 || t[0] != '{':
				reason = "not a JSON object"
			case !utf8.Valid(r):
				reason = "invalid UTF-8"
			case !json.Valid(r):
				reason = "invalid JSON"
			}
		}
		if reason != "" {
			return fmt.Errorf("%w: record %d of the call: %s (nothing was written)", zbstream.ErrRecordType, i, reason)
		}
	}
	return nil
}
