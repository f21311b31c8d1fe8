package zbstream

// Unity Catalog tables as proto streams fed with JSON: the column type,
// the descriptor built from columns, WithJSONToProto and the conversion
// IngestJSON makes on such a stream. The schema's fetch is in
// tabledesc.go.

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/record"
)

// Column is one column of a Unity Catalog table as the tables API returns
// it (record.Column): name, type_name, type_text, type_json, position and
// nullable. Decoded from the API's JSON, a column without "nullable" is
// nullable; a Column literal without Nullable is NOT NULL.
type Column = record.Column

// Error types of the Unity Catalog path, for errors.As.
type (
	// SchemaError is a table schema without a proto descriptor, naming
	// the column (record.SchemaError).
	SchemaError = record.SchemaError
	// ConvertError is a JSON record that does not fit a WithJSONToProto
	// stream's message, naming the field and its ConvertFault
	// (record.ConvertError).
	ConvertError = record.ConvertError
)

// DescriptorFromColumns returns the proto2 message (named "Record") whose
// records a Unity Catalog table of these columns takes, with the type
// mapping of the official Zerobus SDKs (record.DescriptorFromColumns,
// docs/protocol.md §11): STRING, VARIANT, DECIMAL as string; BIGINT,
// TIMESTAMP, TIMESTAMP_NTZ as int64 (microseconds since the epoch); INT,
// SMALLINT, TINYINT, DATE as int32 (days since the epoch); DOUBLE, FLOAT,
// BOOLEAN, BINARY as double, float, bool, bytes; STRUCT as a nested
// message, ARRAY as a repeated field, MAP as a map. A NOT NULL column is a
// required field. A schema that has no such message is a *SchemaError
// naming the column. Client.TableDescriptor fetches a table's columns and
// calls it.
func DescriptorFromColumns(columns []Column) (*descriptorpb.DescriptorProto, error) {
	return record.DescriptorFromColumns(record.DefaultMessageName, columns)
}

// WithJSONToProto makes a proto stream of desc's message (as
// DescriptorFromColumns or Client.TableDescriptor return it; the server is
// given desc) that IngestJSON feeds with JSON: each JSON object is
// converted to desc's record before it is queued (record.JSONToProto:
// protobuf's JSON mapping, a field named by its column's name). An object
// that does not fit is refused at once, and never sent: an error wrapping
// ErrRecordType and a *ConvertError that names the field. The conversion
// runs in the calling goroutine, before the stream's lock is taken.
// IngestRecord, IngestProto and IngestBatch take serialized records of
// desc's message as on any proto stream. A nil or invalid desc is a
// *ConfigError, as is WithJSONToProto with WithProtoMessage or
// WithAvroSchema.
func WithJSONToProto(desc *descriptorpb.DescriptorProto) StreamOption {
	return func(o *streamOptions) error {
		if desc == nil {
			return &ConfigError{Field: "JSONToProto", Reason: "the descriptor must not be nil"}
		}
		if o.desc != nil && o.desc.json == nil {
			return &ConfigError{Field: "RecordType", Reason: "WithJSONToProto and WithProtoMessage exclude each other"}
		}
		b, err := proto.Marshal(desc)
		if err != nil {
			return &ConfigError{Field: "JSONToProto", Reason: "the descriptor does not encode: " + err.Error()}
		}
		md, err := record.MessageDescriptor(b) // as the server reads it
		if err != nil {
			return &ConfigError{Field: "JSONToProto", Reason: "the descriptor is not a message type: " + err.Error()}
		}
		o.desc = &protoDescriptor{name: md.FullName(), bytes: b, json: md}
		o.cfg.RecordType = core.RecordProto
		return nil
	}
}

// jsonToProto converts v, a JSON object (json.RawMessage, []byte) or a
// value encoding/json marshals to one, to a record of the stream's
// WithJSONToProto message.
func (s *Stream) jsonToProto(v any) ([]byte, error) {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("zbstream: marshalling a JSON record: %w", err)
		}
	}
	rec, err := record.JSONToProto(s.proto.json, b)
	if err != nil {
		return nil, core.Errorf("%w: %s: %w", ErrRecordType, s.proto.name, err)
	}
	return rec, nil
}
