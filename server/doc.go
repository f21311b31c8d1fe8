// Package server is zbstream's reference Zerobus-compatible server: both
// stream kinds, Arrow Flight DoPut and RetireStream over gRPC, durable
// storage with group commit, bearer-token authentication and per-table authorization, TLS,
// session rotation, programmable fault injection, and Unity Catalog table
// definitions that records are checked against (Options.Tables), served
// as a workspace serves them (TablesHandler). Users can run it in
// their own tests (see package servertest) to test ingestion code without a
// cloud account, and benchmark clients against its ack-only engine
// (EngineAckOnly).
//
// Where each rule lives:
//
//	server.go    Server and Options: the gRPC services, start and stop
//	auth.go      principals, bearer tokens, per-table authorization;
//	             oauth.go the workspace's OAuth token endpoint
//	conn.go      a stream call: authenticate, response headers at once,
//	             first-message deadline, open, then commit until the end
//	open.go      the create and resume handshakes, fencing of older writers
//	             (records are checked with package record, the rules the
//	             clients share)
//	avro.go      AVRO streams: the writer schema checked at create, the
//	             record checker of each type; avro_datum.go each datum
//	             walked with the compiled schema, to its last byte;
//	             avro_table.go a writer schema against a table's columns
//	tables.go    table definitions (Options.Tables): LoadTables, NewTables;
//	             tables_check.go a stream and its records against its
//	             table's columns; tables_http.go the Unity Catalog tables
//	             API serving them (TablesHandler)
//	owner.go     ownership: streams and client_request_ids per principal
//	receive.go   the receiver: offsets and records checked, the receive queue
//	budget.go    the server-wide receive budget, shared fairly, idle readers
//	decode.go    stream requests decoded from their wire format, one copy;
//	             codec.go gRPC's codec, marking what did not decode
//	wire.go      the two stream kinds' messages behind one interface
//	status.go    the statuses a call ends with, in one place
//	bufpool.go   receive and encode buffers, reused (page faults cost)
//	quote.go     what a client sent, quoted only in part
//	commit.go    the committer: appends, strict duplicates, idle rotation
//	send.go      the sender: acks and close signals, never blocking commits
//	limits.go    limits and their defaults, the per-principal cap
//	retire.go    RetireStream
//	ackonly.go   the engines; arena.go the memory engine's record chunks
//	store.go     the Store contract; store_memory.go the memory engine
//	store_bolt.go         the durable engine: opening, closing, why bbolt
//	store_bolt_commit.go  its committer (group commit, mapped pages dropped)
//	store_bolt_streams.go its operations on streams, checked as they write
//	store_bolt_codec.go   how batches are laid out
//	store_bolt_rss_*.go   dropping the mapping of pages written (Linux)
//	fault.go     fault injection, in the vocabulary of internal/faults;
//	             fault_point.go what a committer holds between the points
//	             where faults act, and the kinds both kinds of call take
//
// Arrow Flight (DoPut, the official SDKs' columnar ingestion):
//
//	flight.go         the Flight service: authenticate, authorize, admit
//	flight_call.go    a DoPut call: frames received, checked, appended
//	                  several per Append, acknowledged cumulatively
//	flight_fault.go   its commits and acks, and the faults injected on
//	                  them (a data frame is a fault's point)
//	flight_counts.go  ArrowCounts: frames and rows received, stored and
//	                  acknowledged per call, kept for the last calls
//	flight_open.go    the schema frame, the stream created with its schema
//	flight_meta.go    the app_metadata JSON: offset_id read, acks written
//	flight_ipc.go     record batches decoded under the stream's schema,
//	                  frames kept as encapsulated IPC messages
//	flight_fb.go      a checked look into an IPC message header
//	flight_verify.go  what arrow-go would allocate, bounded before it reads
//	flight_layout.go  the field nodes and buffers a schema's batches hold
//	flight_table.go   an Arrow schema against a table's columns
//	flight_records.go stored frames read back as record batches
package server
