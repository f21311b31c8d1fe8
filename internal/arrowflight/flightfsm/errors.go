package flightfsm

import (
	"errors"
	"fmt"

	"github.com/zbstream/zbstream/core"
)

// Rule names the protocol rule (docs/protocol.md §12) a server message
// broke.
type Rule uint8

// The rules of a Flight DoPut connection that a server can break.
const (
	// MalformedAck: a PutResult's app_metadata is not the ack JSON
	// (§12.4): bad JSON, a missing, null, duplicate or mistyped field,
	// trailing bytes.
	MalformedAck Rule = iota + 1
	// AckBeforeReady: the first PutResult of a connection was not the
	// bare ready signal (-1/0 without a close duration).
	AckBeforeReady
	// SecondReady: a ready signal (-1/0 without a close duration) after
	// the connection was ready.
	SecondReady
	// SentinelWithRows: ack_up_to_offset -1 with a non-zero row count.
	SentinelWithRows
	// AckAboveSent: an ack for a frame beyond the highest one sent.
	AckAboveSent
	// AckBackwards: an ack below one already received on the connection.
	AckBackwards
	// RowsMismatch: ack_up_to_records is more than the rows sent
	// through the frame acknowledged.
	RowsMismatch
	// RowsBackwards: ack_up_to_records is below an earlier ack's.
	RowsBackwards
)

var ruleNames = [...]string{
	MalformedAck:     "malformed ack metadata",
	AckBeforeReady:   "ack before the ready signal",
	SecondReady:      "second ready signal",
	SentinelWithRows: "ready offset with rows",
	AckAboveSent:     "ack beyond the highest frame sent",
	AckBackwards:     "ack below an earlier ack",
	RowsMismatch:     "more rows acknowledged than sent through the frame acknowledged",
	RowsBackwards:    "acknowledged rows below an earlier ack's",
}

// String returns the rule's description.
func (r Rule) String() string {
	if int(r) < len(ruleNames) && ruleNames[r] != "" {
		return ruleNames[r]
	}
	return fmt.Sprintf("rule(%d)", uint8(r))
}

// ProtocolError is a server message that broke a rule of the Flight
// exchange. It fails the stream: no reconnect makes a server that acks
// what it was never sent trustworthy. errors.Is(err,
// zbstream.ErrProtocol) holds for it, as for the other streams'
// protocol errors.
type ProtocolError struct {
	Rule Rule
	// Got and Bound are the offending value and the bound it broke, where
	// the rule has them (frame offsets, row counts).
	Got, Bound int64
	// Detail says more, for MalformedAck.
	Detail string
}

// Error names the rule and the numbers that broke it.
func (e *ProtocolError) Error() string {
	switch e.Rule {
	case AckAboveSent:
		return fmt.Sprintf("arrowstream: protocol violation: %s: frame %d, highest sent %d", e.Rule, e.Got, e.Bound)
	case AckBackwards:
		return fmt.Sprintf("arrowstream: protocol violation: %s: frame %d, earlier ack %d", e.Rule, e.Got, e.Bound)
	case RowsMismatch:
		return fmt.Sprintf("arrowstream: protocol violation: %s: %d rows, the frames hold %d", e.Rule, e.Got, e.Bound)
	case RowsBackwards:
		return fmt.Sprintf("arrowstream: protocol violation: %s: %d rows, earlier ack %d", e.Rule, e.Got, e.Bound)
	}
	if e.Detail != "" {
		return fmt.Sprintf("arrowstream: protocol violation: %s: %s", e.Rule, e.Detail)
	}
	return "arrowstream: protocol violation: " + e.Rule.String()
}

// Unwrap makes errors.Is(err, zbstream.ErrProtocol) hold.
func (e *ProtocolError) Unwrap() error { return core.ErrProtocol }

// ErrMisuse is wrapped by the errors of calls the driver should not have
// made (a send that skips rows, an empty batch): the machine's state is
// unchanged by them.
var ErrMisuse = errors.New("flightfsm: misuse")

func misuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMisuse}, args...)...)
}
