// Package ingest is "zbstream ingest": a JSON-lines or length-delimited
// protobuf file into a table, exactly once, resumable after any crash. A
// state file beside the input pins how the file maps to offsets (calls of
// fixed records and bytes) and which persistent stream holds them; a new
// run resumes that stream and sends only what lies above its watermark.
// With -table-field every record goes to the table its field names,
// through a writer.Writer.
//
// Where things are:
//
//	ingest.go          Run: flags, state file, one table or routed
//	flags.go           the flags and their checks
//	source.go          the input: formats, reading records, input errors
//	avro.go            -avro-schema: JSON lines into Avro datums
//	check.go           the record checks (record.Checker) before sending
//	batch.go           records into calls, deterministically
//	send.go            one table: send from the watermark, wait, close
//	state.go           the state file (internal/atomicfile) and its checks
//	lock.go            the lock beside the state file: one run at a time
//	refusal.go         a call the server refused for good: what is pinned
//	deadletter.go      -skip-invalid: records set aside in a file
//	progress.go        the progress bar or lines
//	route.go           -table-field: a Writer over many tables
//	route_scan.go      which table each record goes to
//	route_store.go     the state file as the Writer's Store
//	route_progress.go  durable counts of a routed run
package ingest
