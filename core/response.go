package core

import "time"

// ResponseKind tags a server message.
type ResponseKind uint8

// The server messages the machine understands.
const (
	// RespEmpty is a message with no payload set: always a violation.
	RespEmpty ResponseKind = iota
	// RespCreate answers a create: StreamID (HasStreamID).
	RespCreate
	// RespResume answers a resume: Offset is last_committed_offset
	// (HasOffset false: nothing committed).
	RespResume
	// RespAck is a cumulative durability ack: Offset (HasOffset false is a
	// violation).
	RespAck
	// RespCloseSignal asks the client to leave the connection: Duration
	// (HasDuration) is the server's grace.
	RespCloseSignal
)

var responseNames = [...]string{RespEmpty: "empty", RespCreate: "create", RespResume: "resume",
	RespAck: "ack", RespCloseSignal: "close-signal"}

func (k ResponseKind) String() string {
	if int(k) < len(responseNames) {
		return responseNames[k]
	}
	return "response(?)"
}

// Response is a server message, decoded by the transport adapter into plain
// values. proto2 presence is kept: each Has flag says whether the optional
// field was on the wire.
type Response struct {
	Kind ResponseKind

	StreamID    string
	HasStreamID bool

	Offset    int64
	HasOffset bool

	Duration    time.Duration
	HasDuration bool
}
