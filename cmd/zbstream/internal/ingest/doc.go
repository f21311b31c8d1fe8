// Package ingest is "zbstream ingest": a JSON-lines or length-delimited
// protobuf file into a table, exactly once, resumable after any crash (or
// an Arrow or Parquet file, at least once, see below). A
// state file beside the input pins how the file maps to offsets (calls of
// fixed records and bytes) and which persistent stream holds them; a new
// run resumes that stream and sends only what lies above its watermark.
// With -table-field every record goes to the table its field names,
// through a writer.Writer.
//
// With -table-schema the JSON lines go as proto records of the table's
// Unity Catalog schema (record.JSONToProto, on a zbstream.WithJSONToProto
// stream). One flag says both that and where the schema comes from: the
// bare flag reads it from -workspace-url with the -token
// (Client.TableDescriptor), which is the live schema and the common
// case; -table-schema=FILE reads the tables API's answer saved to disk,
// for a run that cannot or should not reach the workspace. The scan
// converts every line before anything is sent, so a line that does not
// fit ends the run as FILE:LINE naming the field (or is set aside with
// -skip-invalid). The state file pins the descriptor the stream is
// created with, and a rerun goes on with it without reading the schema
// again: the stream holds records of that descriptor, whatever the table
// has become since. It takes one table: -table-field is refused, as with
// -avro-schema.
//
// With -format arrow (an Arrow IPC file, stream or file format) or
// -format parquet the file's rows go, in batches of -batch-size rows,
// through an Arrow Flight stream (internal/arrowflight) into one table.
// Such a stream has no id to resume and no watermark to ask for, so the
// state file keeps the rows durable so far, as acks arrive, and a rerun
// skips them: at least once across a crash (rows in flight when it
// happened are sent again), and rows recorded durable are never sent
// again. The file's schema is the stream's; the flags of JSON lines are
// refused.
//
// Where things are:
//
//	ingest.go          Run: flags, state file, one table or routed
//	flags.go           the flags and their checks
//	source.go          the input: formats, reading records, input errors
//	avro.go            -avro-schema: JSON lines into Avro datums
//	tableschema.go     -table-schema: the table's schema, JSON lines into its proto records
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
//	arrow.go           -format arrow|parquet: send after the durable rows, close
//	arrow_flags.go     -format, and the flags it refuses
//	arrow_source.go    the Arrow IPC or Parquet file: schema, rows, readers
//	arrow_batches.go   the file's batches cut into batches of -batch-size rows
//	arrow_state.go     the state file of an Arrow ingestion: the rows durable
//	arrow_acks.go      acks to durable rows, saved as they come
package ingest
