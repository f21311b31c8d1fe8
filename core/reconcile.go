package core

import "math"

// offsetRange is an inclusive range of offsets; empty when first > last.
type offsetRange struct{ first, last int64 }

func (r offsetRange) empty() bool { return r.first > r.last }

// resumeBounds is what watermark validation needs to know about the client's
// history of a persistent stream.
type resumeBounds struct {
	history      bool  // false: a fresh process resuming; no bounds yet
	floor        int64 // last durable offset known to the client
	maxAttempted int64 // highest offset ever handed to a transport
}

// reconciliation is the plan for a resume: complete what the server already
// has, resend what lies above it.
type reconciliation struct {
	complete   offsetRange // already durable on the server: complete locally
	resendFrom int64       // first offset to send on the new connection
	watermark  int64       // W' = W ?? -1
}

// reconcile is the pure decision for a resume with watermark w (present or
// not): it validates every bound first and returns a plan or the violation,
// never half of each. Its cost does not depend on the window's size.
func reconcile(b resumeBounds, r Response) (reconciliation, error) {
	w := NoOffset
	if r.HasOffset {
		w = r.Offset
	}
	if w < NoOffset {
		return reconciliation{}, &ProtocolError{Rule: WatermarkInvalid, Got: w}
	}
	if w == math.MaxInt64 {
		return reconciliation{}, offsetExhausted("resume watermark", w)
	}
	if !b.history {
		return reconciliation{complete: offsetRange{0, -1}, resendFrom: w + 1, watermark: w}, nil
	}
	if w < b.floor {
		return reconciliation{}, &ProtocolError{Rule: WatermarkBelowFloor, Got: w, Bound: b.floor}
	}
	if w > b.maxAttempted {
		return reconciliation{}, &ProtocolError{Rule: WatermarkAboveAttempted, Got: w, Bound: b.maxAttempted}
	}
	return reconciliation{complete: offsetRange{b.floor + 1, w}, resendFrom: w + 1, watermark: w}, nil
}
