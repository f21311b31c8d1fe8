package core

// The ack rule (protocol.md §5.2), decided before anything is touched.

// ackBounds is what ack validation needs to know about one connection, all in
// wire offsets: the floor (last applied ack, or -1 on a fresh ephemeral
// connection, or the watermark) and the highest offset reported sent.
type ackBounds struct{ floor, maxSent int64 }

// checkAck validates a cumulative ack before anything is touched. It returns
// whether the ack advances (false for a duplicate) or the violation.
func checkAck(b ackBounds, r Response) (advance bool, err error) {
	switch {
	case !r.HasOffset:
		return false, &ProtocolError{Rule: AckMissing}
	case r.Offset < b.floor:
		return false, &ProtocolError{Rule: AckBelowFloor, Got: r.Offset, Bound: b.floor}
	case r.Offset > b.maxSent:
		return false, &ProtocolError{Rule: AckAboveSent, Got: r.Offset, Bound: b.maxSent}
	}
	return r.Offset > b.floor, nil
}
