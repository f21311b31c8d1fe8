package contract

// Canonical is the contract's table: one block per enum, message and
// service, in the order of the service's schema. A field line is
// "LABEL TYPE NAME = NUMBER" with LABEL optional or repeated, or
// "oneof ONEOF TYPE NAME = NUMBER" for a member of a oneof. Types are the
// protobuf scalar names or a message or enum of this table (Duration is
// google.protobuf.Duration).
const Canonical = `
enum RecordType
  RECORD_TYPE_UNSPECIFIED = 0
  PROTO = 1
  JSON = 2
  AVRO = 4
  reserved 3

message JsonRecordBatch
  repeated string records = 1

message ProtoEncodedRecordBatch
  repeated bytes records = 1

message AvroRecordBatch
  repeated bytes records = 1

message CreateIngestStreamRequest
  optional string table_name = 1
  optional bytes descriptor_proto = 3
  optional RecordType record_type = 4
  optional string avro_schema_json = 5
  reserved 2
  reserved "stream_id"

message CreateIngestStreamResponse
  optional string stream_id = 1
  reserved 2
  reserved "last_offset_id"

message IngestRecordRequest
  optional int64 offset_id = 1
  oneof record bytes proto_encoded_record = 2
  oneof record string json_record = 3
  oneof record bytes avro_encoded_record = 4

message IngestRecordBatchRequest
  optional int64 offset_id = 1
  oneof batch ProtoEncodedRecordBatch proto_encoded_batch = 2
  oneof batch JsonRecordBatch json_batch = 3
  oneof batch AvroRecordBatch avro_batch = 4

message EphemeralStreamRequest
  oneof payload CreateIngestStreamRequest create_stream = 1
  oneof payload IngestRecordRequest ingest_record = 2
  oneof payload IngestRecordBatchRequest ingest_record_batch = 3

message IngestRecordResponse
  optional int64 durability_ack_up_to_offset = 1

message CloseStreamSignal
  optional Duration duration = 1

message EphemeralStreamResponse
  oneof payload CreateIngestStreamResponse create_stream_response = 1
  oneof payload IngestRecordResponse ingest_record_response = 2
  oneof payload CloseStreamSignal close_stream_signal = 3

message CreatePersistentStreamRequest
  optional CreateIngestStreamRequest create_stream = 1
  reserved 2
  reserved "stream_name"

message ResumeIngestStreamRequest
  oneof identifier string stream_id = 1
  optional bytes descriptor_proto = 2
  optional RecordType record_type = 3
  reserved 4
  reserved "stream_name"

message ResumeIngestStreamResponse
  optional int64 last_committed_offset = 1

message PersistentStreamRequest
  oneof payload CreatePersistentStreamRequest create_stream = 1
  oneof payload ResumeIngestStreamRequest resume_stream = 2
  oneof payload IngestRecordRequest ingest_record = 3
  oneof payload IngestRecordBatchRequest ingest_record_batch = 4

message PersistentStreamResponse
  oneof payload CreateIngestStreamResponse create_stream_response = 1
  oneof payload ResumeIngestStreamResponse resume_stream_response = 2
  oneof payload IngestRecordResponse ingest_record_response = 3
  oneof payload CloseStreamSignal close_stream_signal = 4

message RetireStreamRequest
  optional string table_name = 1
  oneof identifier string stream_id = 2
  reserved 3
  reserved "stream_name"

message RetireStreamResponse

service Zerobus
  rpc EphemeralStream(stream EphemeralStreamRequest) returns (stream EphemeralStreamResponse)
  rpc PersistentStream(stream PersistentStreamRequest) returns (stream PersistentStreamResponse)
  rpc RetireStream(RetireStreamRequest) returns (RetireStreamResponse)
`
