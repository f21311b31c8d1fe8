// Package record holds the rules a record of the Zerobus protocol must
// pass, in one place: what a JSON record is (CheckJSON: one JSON object in
// valid UTF-8), when a proto record matches its stream's descriptor
// (Checker, built from the record type and the serialized DescriptorProto
// a stream is created with), how large an ingest call is against the
// per-call limit (FramedSize, CallSize: each record framed as the request
// carries it), and what a table name is (CheckTable).
//
// It also holds the Unity Catalog path (docs/protocol.md §11): a table's
// schema as the tables API returns it (Column, TableSchema,
// ParseTableSchema), the proto descriptor of its records
// (DescriptorFromColumns, with the official SDKs' type mapping;
// DescriptorFromColumnsWith numbers and names its fields and messages as
// the official Go SDK does, for the drop-in), the errors of a schema
// without one (SchemaError, whose SchemaFault says what kind of problem it
// is), and the conversion of a JSON record to a proto record of it
// (JSONToProto, whose errors name the field).
//
// The client (zbstream), the spool, the reference server, the zbstream
// command and the adapters (contrib/redpanda) all use these functions
// rather than copies of them, so that their rules cannot drift apart: a
// record the server would refuse ends its stream for good, and a client
// that refuses it first, with the same code, keeps the stream alive.
//
// The package imports only the standard library, protobuf and the
// generated wire code (package ingestpb): an adapter that checks records
// does not bring in the server and its storage.
package record
