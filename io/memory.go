package io

// CallCost and RecordCost are what the stream keeps for each call in its
// window and for each of its records, beyond their payload: the byte bound
// (core.Config.MaxInflightBytes) counts them too. Ingest waits, as for a
// full window, while the payload of the calls in flight, plus CallCost for
// each and RecordCost for each of their records, would pass the bound with
// the new call; a call into an empty window is never held back, so that
// any call the per-call limit lets through is accepted in the end.
//
// Why: the byte bound is a memory bound, and with small records the
// payload is the smaller part of what the window keeps. Each call takes a
// 24-byte slot in the window's ring, a power of two, on the heap, where the
// collector lets memory grow to about twice what is live (GOGC=100): up to
// 96 bytes a call. Each record of a batch has a 24-byte slice header (in
// the arena, or the caller's with Options.NoCopy) and, in the arena, its
// framing as the batch message carries it (a tag and a varint length, 2
// to 5 bytes: copyBatch): RecordCost covers both. Counting only the
// payload, a 64 MiB bound measured 137 MiB of peak RSS with 20-byte
// records one per call, and 172 MiB in batches of 100, with acks held back
// 3 s; with the costs counted, see docs/benchmarks.md. A single record has
// no slice header, and is charged RecordCost all the same: one rule for
// every call, at 32 bytes a call more than its slot needs, which stands for
// part of what the bound leaves out (below).
//
// What the bound does not count, as each is bounded on its own: the
// sender's queue (SendBacklogCalls calls of 88 bytes, two queues) and
// gRPC's copies of the calls it has been handed and not yet written (its
// per-stream write quota).
const (
	CallCost   = 96
	RecordCost = 32
)

// overBound reports whether a call of size payload bytes, framed bytes as
// sent and n records would take what the window keeps past its byte bound
// (CallCost, RecordCost). The calls the machine refuses at once, or takes
// without a slot, are left to it: an empty batch, a call over the per-call
// limit, any call once the stream is closing or has ended (Terminal: the
// machine has failed or closed, whether or not the driver has seen it
// finish yet). The caller holds s.mu.
func (s *Stream) overBound(size, framed int64, n int) bool {
	calls, bytes := s.m.Pending()
	if calls == 0 || n == 0 || s.closing || s.m.State().Terminal() || s.m.CallTooLarge(framed) {
		return false
	}
	return kept(int64(calls)+1, bytes+size, s.m.PendingRecords()+int64(n)) > s.maxBytes
}

// kept is what a window of calls holding payload bytes and records keeps,
// as the byte bound counts it.
func kept(calls, payload, records int64) int64 {
	return payload + calls*CallCost + records*RecordCost
}
