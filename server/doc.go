// Package server is zbstream's reference Zerobus-compatible server: both
// stream kinds and RetireStream over gRPC, durable storage with group
// commit, bearer-token authentication and per-table authorization, TLS,
// session rotation and programmable fault injection. Users can run it in
// their own tests (see package servertest) to test ingestion code without a
// cloud account, and benchmark clients against its ack-only engine
// (EngineAckOnly).
//
// Where each rule lives:
//
//	conn.go      a stream call: authenticate, response headers at once,
//	             first-message deadline, open, then commit until the end
//	open.go      the create and resume handshakes, fencing of older writers
//	owner.go     ownership: streams and client_request_ids per principal
//	receive.go   the receiver: offsets and records checked, the receive queue
//	budget.go    the server-wide receive budget, shared fairly, idle readers
//	decode.go    stream requests decoded from their wire format, one copy
//	bufpool.go   receive and encode buffers, reused (page faults cost)
//	quote.go     what a client sent, quoted only in part
//	commit.go    the committer: appends, strict duplicates, idle rotation
//	send.go      the sender: acks and close signals, never blocking commits
//	limits.go    limits and their defaults, the per-principal cap
//	retire.go    RetireStream
//	open.go      the create and resume handshakes (records are checked
//	             with package record, the rules the clients share)
//	ackonly.go   the engines; arena.go the memory engine's record chunks
package server
