package admin

import (
	"encoding/json"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

// The limits of a records page's offsets (the "limit" parameter).
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// StreamInfo is a stream as the admin API and "streams -json" show it.
type StreamInfo struct {
	ID              string          `json:"id"`
	Kind            string          `json:"kind"`
	Table           string          `json:"table"`
	Principal       string          `json:"principal"`
	RecordType      string          `json:"record_type"`
	DescriptorBytes int             `json:"descriptor_bytes,omitempty"`
	AvroSchema      json.RawMessage `json:"avro_schema,omitempty"` // an Avro stream's writer schema
	Watermark       int64           `json:"watermark"`
	Records         int64           `json:"records"`
	Retired         bool            `json:"retired"`
	// Arrow is what the running server counted of an Arrow stream's call
	// (server.ArrowCounts); absent where it has none (another kind of
	// stream, an ended call it no longer keeps, a bolt directory read
	// without the server).
	Arrow *ArrowCounts `json:"arrow_counts,omitempty"`
}

// ArrowCounts is server.ArrowCounts as the API shows it: the data frames
// and rows an Arrow stream's call received (resends included), stored and
// acknowledged.
type ArrowCounts struct {
	FramesReceived int64 `json:"frames_received"`
	RowsReceived   int64 `json:"rows_received"`
	FramesStored   int64 `json:"frames_stored"`
	RowsStored     int64 `json:"rows_stored"`
	FramesAcked    int64 `json:"frames_acked"`
	RowsAcked      int64 `json:"rows_acked"`
}

// RecordInfo is one stored record: JSON records as JSON, Avro records
// decoded as JSON (avro.go says how), an Arrow frame's rows each as JSON
// (arrow.go), others (proto) as base64 bytes.
type RecordInfo struct {
	Offset int64           `json:"offset"`
	Index  int             `json:"index"`
	JSON   json.RawMessage `json:"json,omitempty"`
	Data   []byte          `json:"data,omitempty"`
}

// RecordsPage is the answer of /v1/streams/{id}/records.
type RecordsPage struct {
	StreamID  string       `json:"stream_id"`
	From      int64        `json:"from"`
	Watermark int64        `json:"watermark"`
	Next      int64        `json:"next"`
	Records   []RecordInfo `json:"records"`
}

// StreamsList is the answer of /v1/streams.
type StreamsList struct {
	Streams []StreamInfo `json:"streams"`
}

// ErrorBody is the answer to a request that fails.
type ErrorBody struct {
	Error string `json:"error"`
}

// ToStreamInfo is the stream m as the API shows it.
func ToStreamInfo(m server.StreamMeta) StreamInfo {
	kind := "ephemeral"
	if m.Kind == server.KindPersistent {
		kind = "persistent"
	}
	rt := "unspecified"
	switch ingestpb.RecordType(m.RecordType) {
	case ingestpb.RecordType_JSON:
		rt = "json"
	case ingestpb.RecordType_PROTO:
		rt = "proto"
	case ingestpb.RecordType_AVRO:
		rt = "avro"
	}
	if m.RecordType == server.RecordTypeArrow {
		rt = "arrow"
	}
	var schema json.RawMessage
	if m.AvroSchema != "" && json.Valid([]byte(m.AvroSchema)) {
		schema = CompactJSON([]byte(m.AvroSchema))
	}
	return StreamInfo{
		ID: m.ID, Kind: kind, Table: m.Table, Principal: m.Principal, RecordType: rt,
		DescriptorBytes: len(m.Descriptor), AvroSchema: schema, Watermark: m.Watermark, Records: m.Records, Retired: m.Retired,
	}
}
