package core

// ActionKind tags an Action.
type ActionKind uint8

// What the driver must do, or learn, for each Action.
const (
	// ActOpen: start connection Conn. Resume says whether to send a resume
	// for StreamID or a create carrying RequestID. Headers (a fresh token
	// included) are produced for every open.
	ActOpen ActionKind = iota + 1
	// ActSend: send the call at Offset on Conn under wire offset Wire, with
	// its payload in Record (one record) or Records (a batch), then report
	// the outcome with Sent or ConnectionFailed.
	ActSend
	// ActCloseSend: half-close Conn and keep reading until the server ends it,
	// then report that with ConnectionFailed (any code).
	ActCloseSend
	// ActAbort: tear Conn down now and release it; nothing more from it
	// matters. Every connection the machine opens ends with exactly one
	// ActAbort, also one whose end the driver reported.
	ActAbort
	// ActComplete: offsets Offset..Last (inclusive) are durable. Reconciled
	// says they were learned from a resume watermark rather than an ack.
	ActComplete
	// ActFail: offsets Offset..Last (inclusive) failed with Err.
	ActFail
	// ActInvalidateCredentials: the server rejected the credentials; drop any
	// cached token before the next open.
	ActInvalidateCredentials
	// ActFinished: the stream reached Closed (Err nil) or Failed (Err set).
	// It is the last action the machine ever emits.
	ActFinished
)

var actionNames = [...]string{
	ActOpen: "open", ActSend: "send", ActCloseSend: "close-send", ActAbort: "abort",
	ActComplete: "complete", ActFail: "fail", ActInvalidateCredentials: "invalidate-credentials",
	ActFinished: "finished",
}

func (k ActionKind) String() string {
	if int(k) < len(actionNames) && actionNames[k] != "" {
		return actionNames[k]
	}
	return "action(?)"
}

// Action is one output of the machine: a tagged struct whose fields are
// meaningful per Kind as documented on the ActionKind constants. The payload
// slices alias the caller's records; they are never copied or modified.
type Action struct {
	Kind ActionKind
	Conn ConnID

	Offset int64
	Last   int64
	Wire   int64

	Record  []byte
	Records [][]byte
	// Size is the payload bytes of the call an ActSend carries: the sum
	// of its records' lengths, as the in-flight byte bound counts them.
	Size int64

	Resume    bool
	StreamID  string
	RequestID string

	Reconciled bool
	Err        error
}
