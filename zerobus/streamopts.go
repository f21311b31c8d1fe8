package zerobus

import (
	"math"
	"time"

	"github.com/zbstream/zbstream"
)

// inflightBytes bounds the bytes of the calls in flight: the zbstream
// client's default (the official SDK bounds only their number).
const inflightBytes = 256 << 20

// streamOptions translates the options for the zbstream client; avroSchema
// is the writer schema of an Avro stream ("" for the others).
func streamOptions(tp TableProperties, o StreamConfigurationOptions, avroSchema string) ([]zbstream.StreamOption, error) {
	opts := []zbstream.StreamOption{
		zbstream.WithMaxInflight(maxInt(o.MaxInflightRequests), inflightBytes),
		zbstream.WithFlushTimeout(millis(o.FlushTimeoutMs)),
	}
	// A zero timeout keeps the client's default, as it always has here.
	for _, t := range []struct {
		ms  uint64
		opt func(time.Duration) zbstream.StreamOption
	}{{o.RecoveryTimeoutMs, zbstream.WithOpenTimeout}, {o.ServerLackOfAckTimeoutMs, zbstream.WithAckTimeout}, {o.FlushTimeoutMs, zbstream.WithCloseTimeout}} {
		if t.ms != 0 {
			opts = append(opts, t.opt(millis(t.ms)))
		}
	}
	if o.Recovery {
		backoff := millis(o.RecoveryBackoffMs)
		opts = append(opts, zbstream.WithRetries(int(o.RecoveryRetries)), zbstream.WithBackoff(zbstream.Backoff{Initial: backoff, Max: backoff}))
	} else {
		opts = append(opts, zbstream.WithoutRecovery())
	}
	grace := time.Duration(math.MaxInt64) // as long as the server announces
	if p := o.StreamPausedMaxWaitTimeMs; p != nil {
		grace = millis(*p)
	}
	opts = append(opts, zbstream.WithMaxGrace(grace))
	switch o.RecordType {
	case RecordTypeJson:
	case RecordTypeProto:
		if len(tp.DescriptorProto) == 0 {
			return nil, fatal(msgNoDescriptor)
		}
		m, err := messageOf(tp.DescriptorProto)
		if err != nil {
			return nil, fatal("Invalid argument: " + err.Error() + ".")
		}
		opts = append(opts, zbstream.WithProtoMessage(m))
	case RecordTypeAvro:
		if avroSchema == "" {
			return nil, fatal(msgAvroNeedsSchema)
		}
		opts = append(opts, zbstream.WithAvroSchema(avroSchema))
	default:
		return nil, fatal(msgNoRecordType)
	}
	return opts, nil
}

// millis converts milliseconds to a duration, saturating.
func millis(ms uint64) time.Duration {
	if ms > uint64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
