package arrowstream

import (
	"github.com/zbstream/zbstream/internal/arrowflight"
	"github.com/zbstream/zbstream/internal/arrowflight/flightfsm"
)

// MaxFrameBytes is the largest data FlightData a stream sends, its
// app_metadata included (docs/protocol.md §12.3): a batch whose encoding
// is larger is split by rows into several frames.
const MaxFrameBytes = arrowflight.MaxFrameBytes

// ErrSchemaMismatch is wrapped by the error of an ingest whose batch's
// schema is not the stream's (fields, types, nullability and metadata).
var ErrSchemaMismatch = arrowflight.ErrSchemaMismatch

// ProtocolError is a server message that broke a rule of the Flight
// exchange (docs/protocol.md §12.4). It fails the stream: no reconnect
// makes a server that acks what it was never sent trustworthy.
// errors.Is(err, zbstream.ErrProtocol) holds for it, as for the other
// streams' protocol errors; errors.As gives its Rule and numbers.
type ProtocolError = flightfsm.ProtocolError

// Rule names the protocol rule a server message broke.
type Rule = flightfsm.Rule

// The rules of a Flight DoPut connection that a server can break.
const (
	// MalformedAck: a PutResult's app_metadata is not the ack JSON: bad
	// JSON, a missing, null, duplicate or mistyped field, trailing bytes.
	MalformedAck = flightfsm.MalformedAck
	// AckBeforeReady: the first PutResult of a connection was not the
	// bare ready signal (-1/0 without a close duration).
	AckBeforeReady = flightfsm.AckBeforeReady
	// SecondReady: a ready signal after the connection was ready.
	SecondReady = flightfsm.SecondReady
	// SentinelWithRows: ack_up_to_offset -1 with a non-zero row count.
	SentinelWithRows = flightfsm.SentinelWithRows
	// AckAboveSent: an ack for a frame beyond the highest one sent.
	AckAboveSent = flightfsm.AckAboveSent
	// AckBackwards: an ack below one already received on the connection.
	AckBackwards = flightfsm.AckBackwards
	// RowsMismatch: ack_up_to_records is more than the rows sent through
	// the frame acknowledged.
	RowsMismatch = flightfsm.RowsMismatch
	// RowsBackwards: ack_up_to_records is below an earlier ack's.
	RowsBackwards = flightfsm.RowsBackwards
)
