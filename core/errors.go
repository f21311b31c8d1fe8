package core

import (
	"errors"
	"fmt"
	"strings"
)

// Prefix starts the message of every error the library returns, once. The
// rule that keeps it to once: an error that shows another error's message
// inside its own (a wrapper: *ConnectionError, *RetryError, Errorf) shows
// it with Unprefixed, so that only the outermost message carries the
// prefix, at its start; and an error handed to gRPC (a dialer's, a
// handshake's) carries none, since gRPC quotes it inside a status message.
// errors.Is and errors.As are untouched: only the text changes.
const Prefix = "zbstream: "

// Unprefixed returns err's message without its leading Prefix: how a
// wrapping error shows the error it wraps.
func Unprefixed(err error) string {
	if err == nil {
		return "<nil>" // as fmt shows it
	}
	return strings.TrimPrefix(err.Error(), Prefix)
}

// Errorf is fmt.Errorf for an error of the library that shows others: its
// message is Prefix and the formatted text, in which every error argument
// is shown with Unprefixed; %w wraps as with fmt.Errorf (errors.Unwrap,
// errors.Is and errors.As see the same tree).
func Errorf(format string, a ...any) error {
	tree := fmt.Errorf(format, a...)
	shown := make([]any, len(a))
	for i, x := range a {
		if err, ok := x.(error); ok { // never nil: a nil x is no error
			x = Unprefixed(err)
		}
		shown[i] = x
	}
	msg := Prefix + strings.TrimPrefix(fmt.Sprintf(strings.ReplaceAll(format, "%w", "%v"), shown...), Prefix)
	switch u := tree.(type) {
	case interface{ Unwrap() error }:
		return &wrapError{msg: msg, err: u.Unwrap()}
	case interface{ Unwrap() []error }:
		return &wrapErrors{msg: msg, errs: u.Unwrap()}
	}
	return errors.New(msg)
}

// wrapError and wrapErrors are fmt's wrapping errors with Errorf's message.
type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

type wrapErrors struct {
	msg  string
	errs []error
}

func (e *wrapErrors) Error() string   { return e.msg }
func (e *wrapErrors) Unwrap() []error { return e.errs }

// Caller misuse: the call returns one of these (possibly wrapped) and the
// machine is unchanged.
var (
	// ErrInvalidConfig is wrapped by every *ConfigError.
	ErrInvalidConfig = errors.New("zbstream: invalid config")
	// ErrTimeBackwards: an input carried an Instant earlier than a previous one.
	ErrTimeBackwards = errors.New("zbstream: time went backwards")
	// ErrAlreadyOpened: Open was called on a machine that is not idle.
	ErrAlreadyOpened = errors.New("zbstream: stream already opened")
	// ErrNotOpened: records were ingested before the first open succeeded.
	ErrNotOpened = errors.New("zbstream: stream not opened yet")
	// ErrClosed: the stream was closed (or is closing) and takes no new records.
	ErrClosed = errors.New("zbstream: stream closed")
	// ErrUnknownConn: an event named a connection the machine never issued.
	ErrUnknownConn = errors.New("zbstream: unknown connection")
	// ErrUnknownSend: a send outcome was reported for an offset the machine did
	// not emit on that connection, or out of order.
	ErrUnknownSend = errors.New("zbstream: send outcome for an offset never emitted")
	// ErrRecordType: a call's records are not of the stream's record type.
	ErrRecordType = errors.New("zbstream: wrong record type for this stream")
	// ErrCallTooLarge: one ingest call is larger than the per-call limit.
	ErrCallTooLarge = errors.New("zbstream: ingest call too large")
)

// ErrWindowFull is backpressure, not a failure: the window of buffered and
// in-flight calls is full (by count or by bytes). Nothing changed; try again
// after completions free space.
var ErrWindowFull = errors.New("zbstream: window full")

// Terminal causes. The machine's Err wraps one of these once it has failed.
var (
	// ErrStreamFailed wraps the terminal error returned to calls made after
	// the stream failed.
	ErrStreamFailed = errors.New("zbstream: stream failed")
	// ErrProtocol is wrapped by every *ProtocolError.
	ErrProtocol = errors.New("zbstream: protocol violation")
	// ErrOffsetSpaceExhausted: the next offset would overflow int64.
	ErrOffsetSpaceExhausted = errors.New("zbstream: offset space exhausted")
	// ErrRetriesExhausted is wrapped by *RetryError.
	ErrRetriesExhausted = errors.New("zbstream: recovery retries exhausted")
	// ErrOpenTimeout: an open attempt got no answer within the open timeout.
	ErrOpenTimeout = errors.New("zbstream: open timed out")
	// ErrAckTimeout: records were in flight and no acknowledgement advanced
	// within the ack timeout.
	ErrAckTimeout = errors.New("zbstream: no acknowledgement within the ack timeout")
	// ErrCloseTimeout: Close could not make every accepted record durable
	// within the close timeout; the rest failed with this cause.
	ErrCloseTimeout = errors.New("zbstream: close timed out before every record was acknowledged")
)

// ConfigError reports one invalid field of a Config.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("zbstream: invalid config: %s %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) hold.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// LimitError reports a call refused by a size limit.
type LimitError struct {
	Limit string // which limit, e.g. "per-call bytes"
	Max   int64
	Got   int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("zbstream: ingest call too large: %d bytes over the %s limit of %d", e.Got, e.Limit, e.Max)
}

// Unwrap makes errors.Is(err, ErrCallTooLarge) hold.
func (e *LimitError) Unwrap() error { return ErrCallTooLarge }

// Violation names the rule a misbehaving server broke.
type Violation uint8

// The protocol rules the machine enforces on the server.
const (
	// AckMissing: an ack without durability_ack_up_to_offset.
	AckMissing Violation = iota + 1
	// AckBelowFloor: an ack below the last applied ack (or watermark).
	AckBelowFloor
	// AckAboveSent: an ack above the highest offset sent on the connection.
	AckAboveSent
	// WatermarkInvalid: a resume watermark below -1.
	WatermarkInvalid
	// WatermarkBelowFloor: a resume watermark below what was acknowledged.
	WatermarkBelowFloor
	// WatermarkAboveAttempted: a resume watermark above anything ever sent.
	WatermarkAboveAttempted
	// OpenResponseKind: an open answered with the wrong kind of response.
	OpenResponseKind
	// StreamIDMissing: a create response without a stream id.
	StreamIDMissing
	// UnexpectedMessage: a message the protocol does not allow at this point
	// (an ack before the open response, a second open response, an empty one).
	UnexpectedMessage
)

var violationNames = [...]string{
	AckMissing:              "ack without an offset",
	AckBelowFloor:           "ack below the ack floor",
	AckAboveSent:            "ack above the highest offset sent on this connection",
	WatermarkInvalid:        "resume watermark below -1",
	WatermarkBelowFloor:     "resume watermark below the acknowledged offset",
	WatermarkAboveAttempted: "resume watermark above the highest offset ever sent",
	OpenResponseKind:        "open answered with the wrong response kind",
	StreamIDMissing:         "create response without a stream id",
	UnexpectedMessage:       "unexpected message",
}

func (v Violation) String() string {
	if int(v) < len(violationNames) && violationNames[v] != "" {
		return violationNames[v]
	}
	return fmt.Sprintf("violation(%d)", uint8(v))
}

// ProtocolError is a server message that broke a protocol rule. It fails the
// stream and is never retried. Got and Bound carry the offending value and the
// bound it broke where the rule has them.
type ProtocolError struct {
	Rule   Violation
	Got    int64
	Bound  int64
	Detail string
}

func (e *ProtocolError) Error() string {
	switch e.Rule {
	case AckBelowFloor, WatermarkBelowFloor:
		return fmt.Sprintf("zbstream: protocol violation: %s: got %d, floor %d", e.Rule, e.Got, e.Bound)
	case AckAboveSent, WatermarkAboveAttempted:
		return fmt.Sprintf("zbstream: protocol violation: %s: got %d, highest %d", e.Rule, e.Got, e.Bound)
	case WatermarkInvalid:
		return fmt.Sprintf("zbstream: protocol violation: %s: got %d", e.Rule, e.Got)
	}
	if e.Detail != "" {
		return fmt.Sprintf("zbstream: protocol violation: %s: %s", e.Rule, e.Detail)
	}
	return "zbstream: protocol violation: " + e.Rule.String()
}

// Unwrap makes errors.Is(err, ErrProtocol) hold.
func (e *ProtocolError) Unwrap() error { return ErrProtocol }

// ConnectionError is a connection's failure as the transport reported it,
// classified by its status code.
type ConnectionError struct {
	Code Code
	Err  error
}

func (e *ConnectionError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("zbstream: connection failed: %s", e.Code)
	}
	return fmt.Sprintf("zbstream: connection failed (%s): %s", e.Code, Unprefixed(e.Err))
}

// Unwrap returns the transport's error.
func (e *ConnectionError) Unwrap() error { return e.Err }

// Retryable reports whether recovery may reconnect after this failure: its
// code is retryable, and no error in its cause says otherwise with a
// Retryable method of its own. A transport uses that method for a failure
// that keeps a retryable code but that no reconnect can fix: a TLS
// mismatch is UNAVAILABLE to gRPC, as a server that is down is.
func (e *ConnectionError) Retryable() bool {
	var r interface{ Retryable() bool }
	if e.Err != nil && errors.As(e.Err, &r) && !r.Retryable() {
		return false
	}
	return e.Code.Retryable()
}

// RetryError reports that recovery gave up: Attempts reconnects in one
// episode made no durable progress. Last is the final failure.
type RetryError struct {
	Attempts int
	Last     error
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("zbstream: recovery retries exhausted after %d attempts: %s", e.Attempts, Unprefixed(e.Last))
}

// Unwrap exposes both ErrRetriesExhausted and the last failure to errors.Is/As.
func (e *RetryError) Unwrap() []error { return []error{ErrRetriesExhausted, e.Last} }
