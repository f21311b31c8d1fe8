package propertytests

// The model: a deliberately simple, obviously correct account of what the
// protocol (docs/protocol.md §4, §5) says a stream's data path must look
// like. It holds plain slices and integers; it never looks inside the
// machine. The state-machine harness (statemachine_test.go) feeds it the same
// inputs as the real core.Machine and compares.

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zbstream/zbstream/core"
)

// modelCall is one accepted ingest call, with a private deep copy of its
// payload (the machine keeps the caller's slices by reference).
type modelCall struct {
	single  bool
	records [][]byte
	size    int64

	completed int // ActComplete covering it, ever
	failed    int // ActFail covering it, ever
}

// model is the expected data state of one stream.
type model struct {
	kind     core.Kind
	maxCalls int
	maxBytes int64
	maxCall  int64

	// calls[i] has offset first+i. Every accepted call stays here forever,
	// so completion counts survive.
	first int64
	calls []modelCall

	floor        int64 // highest durable offset, or -1
	next         int64 // next offset to assign
	maxAttempted int64 // highest offset ever emitted in an ActSend

	// history: the client knows bounds for a resume watermark (§5.3).
	history  bool
	opened   bool // a first open response was accepted
	streamID string

	// The current connection as the actions announced it (0: none).
	lastConn   core.ConnID
	conn       core.ConnID
	connOpened bool  // its open response was accepted
	resumeOpen bool  // it was opened with a resume
	sendNext   int64 // next offset an ActSend on it must carry
	maxSent    int64 // highest offset reported Sent on it
	base       int64 // ephemeral: logical offset of wire offset 0 on it
	closeSent  bool  // ActCloseSend was emitted on it
	aborted    map[core.ConnID]bool

	closeRequested bool
	failed         bool // an ActFinished with an error was seen
	finished       bool // ActFinished was seen
	authRetried    bool
}

func newModel(kind core.Kind, cfg core.Config) *model {
	return &model{
		kind:         kind,
		maxCalls:     cfg.MaxInflightCalls,
		maxBytes:     cfg.MaxInflightBytes,
		maxCall:      cfg.MaxCallBytes,
		floor:        -1,
		next:         0,
		maxAttempted: -1,
		history:      cfg.StreamID == "",
		streamID:     cfg.StreamID,
		maxSent:      -1,
		aborted:      map[core.ConnID]bool{},
	}
}

// modelCopy deep-copies records.
func modelCopy(recs [][]byte) [][]byte {
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = bytes.Clone(r)
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out
}

// call returns the call at offset o, or nil if o was never accepted.
func (md *model) call(o int64) *modelCall {
	if o < md.first || o >= md.next || o-md.first >= int64(len(md.calls)) {
		return nil
	}
	return &md.calls[o-md.first]
}

// pending returns the number of accepted calls that are not durable and
// their bytes.
func (md *model) pending() (int, int64) {
	var n int
	var b int64
	for o := md.floor + 1; o < md.next; o++ {
		n++
		b += md.call(o).size
	}
	return n, b
}

// modelIngestOutcome is what an ingest call must produce.
type modelIngestOutcome uint8

const (
	modelAccept modelIngestOutcome = iota
	modelNoOffset
	modelErrFailed
	modelErrClosed
	modelErrNotOpened
	modelErrRecordType
	modelErrTooLarge
	modelErrWindowFull
	modelErrExhausted
)

// modelFramed is a record of n bytes as an ingest request carries it, which
// the per-call limit counts: the wire's own arithmetic (a tag of field 1,
// a length-delimited value), not the core's.
func modelFramed(n int) int64 {
	return int64(protowire.SizeTag(1) + protowire.SizeBytes(n))
}

// ingestOutcome decides an ingest call of size bytes of payload, call
// bytes as sent (modelFramed; empty: an empty batch)
// per §5.1 and §5.6. closedState says the machine is closing or closed.
func (md *model) ingestOutcome(empty, wrongType bool, size, call int64) modelIngestOutcome {
	switch {
	case md.failed:
		return modelErrFailed
	case md.closeRequested || md.finished:
		return modelErrClosed
	case !md.opened:
		return modelErrNotOpened
	case wrongType:
		return modelErrRecordType
	case empty:
		return modelNoOffset
	case call > md.maxCall:
		return modelErrTooLarge
	}
	n, b := md.pending()
	switch {
	case n >= md.maxCalls || b+size > md.maxBytes:
		return modelErrWindowFull
	case md.next == math.MaxInt64:
		return modelErrExhausted
	}
	return modelAccept
}

// accept records an accepted call and returns its offset.
func (md *model) accept(single bool, recs [][]byte) int64 {
	var size int64
	for _, r := range recs {
		size += int64(len(r))
	}
	if len(md.calls) == 0 {
		md.first = md.next
	}
	md.calls = append(md.calls, modelCall{single: single, records: modelCopy(recs), size: size})
	o := md.next
	md.next++
	return o
}

// modelAckVerdict is the model's decision about one ack (§5.2).
type modelAckVerdict struct {
	advance bool             // a valid ack that moves the floor
	to      int64            // the new floor (logical) when advance
	rules   []core.Violation // non-empty: a violation, any of these rules
}

// ackVerdict validates an ack carrying wire offset a (has: present) on the
// current connection.
func (md *model) ackVerdict(a int64, has bool) modelAckVerdict {
	if !md.connOpened {
		return modelAckVerdict{rules: []core.Violation{core.UnexpectedMessage}}
	}
	if !has {
		return modelAckVerdict{rules: []core.Violation{core.AckMissing}}
	}
	floorWire := md.floor - md.base
	sentWire := md.maxSent - md.base
	var rules []core.Violation
	if a < floorWire {
		rules = append(rules, core.AckBelowFloor)
	}
	if a > sentWire {
		rules = append(rules, core.AckAboveSent)
	}
	if len(rules) > 0 {
		return modelAckVerdict{rules: rules}
	}
	if a == floorWire {
		return modelAckVerdict{}
	}
	return modelAckVerdict{advance: true, to: a + md.base}
}

// modelResumeVerdict is the model's decision about one resume watermark
// (§5.3).
type modelResumeVerdict struct {
	ok        bool
	w         int64 // W' = W ?? -1
	exhausted bool  // W' + 1 would overflow
	rules     []core.Violation
}

func (md *model) resumeVerdict(w int64, has bool) modelResumeVerdict {
	if !has {
		w = -1
	}
	v := modelResumeVerdict{w: w}
	if w == math.MaxInt64 {
		// Above any bound, but the spec names the failure: offset-space
		// exhaustion (§8).
		v.exhausted = true
		return v
	}
	if w < -1 {
		v.rules = append(v.rules, core.WatermarkInvalid)
	}
	if md.history {
		if w < md.floor {
			v.rules = append(v.rules, core.WatermarkBelowFloor)
		}
		if w > md.maxAttempted {
			v.rules = append(v.rules, core.WatermarkAboveAttempted)
		}
	}
	v.ok = len(v.rules) == 0 && !v.exhausted
	return v
}

// unacked is the model's Unacked: every accepted call above the floor, in
// offset order, grouped as ingested.
func (md *model) unacked() []core.Batch {
	var out []core.Batch
	for o := md.floor + 1; o < md.next; o++ {
		out = append(out, core.Batch{Offset: o, Records: md.call(o).records})
	}
	return out
}

// modelSameBatches compares two Unacked lists by offsets and payload bytes.
func modelSameBatches(got, want []core.Batch) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Offset != want[i].Offset {
			return fmt.Errorf("batch %d has offset %d, want %d", i, got[i].Offset, want[i].Offset)
		}
		if !modelSameRecords(got[i].Records, want[i].Records) {
			return fmt.Errorf("offset %d carries %q, want %q", got[i].Offset, got[i].Records, want[i].Records)
		}
	}
	return nil
}

func modelSameRecords(got, want [][]byte) bool {
	return slices.EqualFunc(got, want, func(a, b []byte) bool { return bytes.Equal(a, b) })
}

// payloadOf returns the records an ActSend carries, grouped as ingested.
func modelPayloadOf(a core.Action) (single bool, recs [][]byte) {
	if a.Records != nil {
		return false, a.Records
	}
	return true, [][]byte{a.Record}
}
