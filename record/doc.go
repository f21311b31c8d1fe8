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
// is), the conversion of a JSON record to a proto record of it
// (JSONToProto, whose errors name the field); and what such a table
// accepts (TableChecker): JSON records, the message of a proto stream and
// its records, and the parsed columns for checks of other formats (the
// reference server's Avro check), with errors that name the field.
//
// The client (zbstream), the spool, the reference server, the zbstream
// command and the adapters (contrib/redpanda) all use these functions
// rather than copies of them, so that their rules cannot drift apart: a
// record the server would refuse ends its stream for good, and a client
// that refuses it first, with the same code, keeps the stream alive.
//
// Where each rule lives:
//
//	json.go            CheckJSON: one JSON object in valid UTF-8, one pass
//	checker.go         Checker: a stream's records against its record type
//	                   and descriptor; MessageDescriptor, SameDescriptor
//	size.go            FramedSize, CallSize: records as a request frames them
//	table.go           CheckTable: catalog.schema.table
//	schema.go          Column, TableSchema, ParseTableSchema, SchemaError
//	schema_type.go     a column's type, from type_name and type_json
//	descriptor.go      DescriptorFromColumns: the official type mapping
//	descriptor_options.go DescriptorFromColumnsWith: the official Go SDK's
//	                   numbering and message names, for the drop-in
//	schema_fault.go    SchemaFault: what kind of problem a SchemaError is
//	convert.go         JSONToProto and its ConvertError; convert_scan.go
//	                   its tokens, after CheckJSON; convert_scalar.go
//	                   the scalars, as protobuf's JSON mapping reads them
//	tablecheck.go      TableChecker: NewTableChecker, CheckJSON, FitError
//	tablefield.go      TableField, FieldType: the parsed columns, exported
//	tablefit.go        ProtoFit: a stream's message against the columns
//	tablefit_record.go ProtoFit.Check: its records, NOT NULL columns set
//
// The package imports only the standard library, protobuf and the
// generated wire code (package ingestpb): an adapter that checks records
// does not bring in the server and its storage.
package record
