package zerobus

import "math"

// RecordType is the encoding of a stream's records, as the official SDK
// numbers it.
type RecordType int32

// The record types.
const (
	// RecordTypeUnspecified is no record type. In StreamConfigurationOptions
	// it means the default, RecordTypeProto.
	RecordTypeUnspecified RecordType = 0
	// RecordTypeProto records are serialized protobuf messages ([]byte)
	// of the message TableProperties.DescriptorProto describes.
	RecordTypeProto RecordType = 1
	// RecordTypeJson records are JSON objects (string).
	RecordTypeJson RecordType = 2
	// RecordTypeAvro records are raw Avro binary datums ([]byte) of the
	// stream's writer schema. Only CreateAvroStream makes such a stream
	// (built with the avro tag, as the official SDK's Beta Avro API is);
	// CreateStream refuses it, having no schema to send.
	RecordTypeAvro RecordType = 4
)

// StreamConfigurationOptions configures a stream. A nil
// *StreamConfigurationOptions means DefaultStreamConfigurationOptions, and
// in a non-nil one every zero field takes its default as well, as in the
// official SDK: to turn Recovery off, set it false together with at least
// one of RecoveryTimeoutMs, RecoveryBackoffMs and RecoveryRetries (with all
// three zero, Recovery is taken to be its default, true).
type StreamConfigurationOptions struct {
	// MaxInflightRequests bounds the ingest calls accepted but not yet
	// acknowledged; ingest blocks beyond it. Default 1,000,000. (zbstream
	// also keeps its 256 MiB bound on their bytes.)
	MaxInflightRequests uint64

	// Recovery reconnects the stream after a retryable failure and sends
	// again what was not acknowledged. Default true.
	Recovery bool

	// RecoveryTimeoutMs bounds each attempt to open the stream, in
	// milliseconds. Default 15,000.
	RecoveryTimeoutMs uint64

	// RecoveryBackoffMs is the longest wait before a reconnect attempt, in
	// milliseconds: each wait is drawn at random up to it (the official SDK
	// waits exactly this long). Default 2,000.
	RecoveryBackoffMs uint64

	// RecoveryRetries is how many reconnect attempts one recovery may make
	// without progress. Default 4.
	RecoveryRetries uint32

	// ServerLackOfAckTimeoutMs: records in flight with no acknowledgement
	// for this long fail the connection (and recovery reconnects), in
	// milliseconds. Default 60,000.
	ServerLackOfAckTimeoutMs uint64

	// FlushTimeoutMs bounds Flush, WaitForOffset, RecordAck.Await and
	// Close, in milliseconds. Default 300,000.
	FlushTimeoutMs uint64

	// RecordType is the type of every record of the stream. Default
	// RecordTypeProto, which needs TableProperties.DescriptorProto.
	RecordType RecordType

	// StreamPausedMaxWaitTimeMs caps how long the stream keeps draining
	// acknowledgements after the server asks it to leave, before it
	// reconnects, in milliseconds: nil waits as long as the server
	// announces (the default), 0 reconnects at once, x waits at most
	// min(x, announced).
	StreamPausedMaxWaitTimeMs *uint64
}

// DefaultStreamConfigurationOptions returns the default options; change
// fields of the result and pass it to CreateStream.
func DefaultStreamConfigurationOptions() *StreamConfigurationOptions {
	return &StreamConfigurationOptions{
		MaxInflightRequests:      1_000_000,
		Recovery:                 true,
		RecoveryTimeoutMs:        15_000,
		RecoveryBackoffMs:        2_000,
		RecoveryRetries:          4,
		ServerLackOfAckTimeoutMs: 60_000,
		FlushTimeoutMs:           300_000,
		RecordType:               RecordTypeProto,
	}
}

// effective returns the options a stream runs with: nil is the defaults,
// and every zero field of o takes its default (Recovery too when the three
// recovery numbers are all zero).
func (o *StreamConfigurationOptions) effective() StreamConfigurationOptions {
	def := DefaultStreamConfigurationOptions()
	if o == nil {
		return *def
	}
	e := *o
	if e.RecoveryTimeoutMs == 0 && e.RecoveryBackoffMs == 0 && e.RecoveryRetries == 0 {
		e.Recovery = def.Recovery
	}
	orDefault(&e.MaxInflightRequests, def.MaxInflightRequests)
	orDefault(&e.RecoveryTimeoutMs, def.RecoveryTimeoutMs)
	orDefault(&e.RecoveryBackoffMs, def.RecoveryBackoffMs)
	orDefault(&e.RecoveryRetries, def.RecoveryRetries)
	orDefault(&e.ServerLackOfAckTimeoutMs, def.ServerLackOfAckTimeoutMs)
	orDefault(&e.FlushTimeoutMs, def.FlushTimeoutMs)
	orDefault(&e.RecordType, def.RecordType)
	if e.StreamPausedMaxWaitTimeMs != nil {
		v := *e.StreamPausedMaxWaitTimeMs
		e.StreamPausedMaxWaitTimeMs = &v
	}
	return e
}

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// TableProperties names the table a stream writes and, for proto records,
// the message they are.
type TableProperties struct {
	// TableName is the table, catalog.schema.table.
	TableName string

	// DescriptorProto is a serialized google.protobuf.DescriptorProto of
	// the records' message (required for RecordTypeProto, ignored for
	// JSON), e.g. proto.Marshal(protodesc.ToDescriptorProto(md)). Every
	// message and enum its fields use must be nested in it.
	DescriptorProto []byte
}

// maxInt clamps a count to int.
func maxInt(n uint64) int {
	if n > math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}
