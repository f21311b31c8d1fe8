//go:build arrow

package zerobus

import (
	"math"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/arrowflight"
)

// RecoverySetting says whether an Arrow stream reconnects after a
// retryable failure. The zero value is RecoveryEnabled.
type RecoverySetting int8

// The recovery settings.
const (
	// RecoveryEnabled reconnects after a retryable failure and sends again
	// the rows not yet acknowledged (the default).
	RecoveryEnabled RecoverySetting = 0
	// RecoveryDisabled fails the stream at its first connection failure.
	RecoveryDisabled RecoverySetting = 1
)

// IPCCompressionType is the codec of the Arrow IPC bodies an Arrow stream
// sends. The zero value, IPCCompressionDefault, is no compression.
type IPCCompressionType int8

// The IPC body codecs.
const (
	// IPCCompressionDefault is no compression.
	IPCCompressionDefault IPCCompressionType = 0
	// IPCCompressionNone is no compression, said explicitly.
	IPCCompressionNone IPCCompressionType = 1
	// IPCCompressionLZ4Frame compresses bodies in the LZ4 frame format.
	IPCCompressionLZ4Frame IPCCompressionType = 2
	// IPCCompressionZstd compresses bodies with Zstandard.
	IPCCompressionZstd IPCCompressionType = 3
)

// ArrowStreamConfigurationOptions configures an Arrow Flight stream. A
// zero field takes its default (DefaultArrowStreamConfigurationOptions);
// nil options are the defaults.
type ArrowStreamConfigurationOptions struct {
	// MaxInflightBatches bounds the batches accepted and not yet
	// acknowledged: IngestBatch waits for room. Default 1,000.
	MaxInflightBatches uint64
	// Recovery says whether the stream reconnects after a retryable
	// failure. Default RecoveryEnabled.
	Recovery RecoverySetting
	// RecoveryTimeoutMs bounds each connection attempt: the DoPut call and
	// the server's ready signal. Default 15,000.
	RecoveryTimeoutMs uint64
	// RecoveryBackoffMs is the longest wait before a reconnect (the wait is
	// drawn at random up to it). Default 2,000.
	RecoveryBackoffMs uint64
	// RecoveryRetries is the number of reconnect attempts of one recovery.
	// Default 4.
	RecoveryRetries uint32
	// ServerLackOfAckTimeoutMs is how long batches in flight may see no
	// acknowledgement before the connection is given up. Default 60,000.
	ServerLackOfAckTimeoutMs uint64
	// FlushTimeoutMs bounds Flush, WaitForOffset and Close. Default
	// 300,000.
	FlushTimeoutMs uint64
	// ConnectionTimeoutMs bounds stream creation as a whole. Default
	// 30,000.
	ConnectionTimeoutMs uint64
	// IPCCompression is the codec of the IPC bodies sent. Default
	// IPCCompressionNone.
	IPCCompression IPCCompressionType
	// StreamPausedMaxWaitTimeMs caps how long the stream keeps a
	// connection the server asked it to leave (a rotation notice), waiting
	// for the acknowledgements of what it sent there: nil waits as long as
	// the server announces, 0 moves at once, more waits at most that.
	StreamPausedMaxWaitTimeMs *uint64
}

// DefaultArrowStreamConfigurationOptions returns the default options of an
// Arrow stream, every field set.
func DefaultArrowStreamConfigurationOptions() *ArrowStreamConfigurationOptions {
	return &ArrowStreamConfigurationOptions{
		MaxInflightBatches:       1_000,
		Recovery:                 RecoveryEnabled,
		RecoveryTimeoutMs:        15_000,
		RecoveryBackoffMs:        2_000,
		RecoveryRetries:          4,
		ServerLackOfAckTimeoutMs: 60_000,
		FlushTimeoutMs:           300_000,
		ConnectionTimeoutMs:      30_000,
		IPCCompression:           IPCCompressionNone,
	}
}

// effective returns the options with every zero field at its default.
func (o *ArrowStreamConfigurationOptions) effective() ArrowStreamConfigurationOptions {
	d := *DefaultArrowStreamConfigurationOptions()
	if o == nil {
		return d
	}
	e := *o
	for _, f := range []struct{ v, def *uint64 }{
		{&e.MaxInflightBatches, &d.MaxInflightBatches}, {&e.RecoveryTimeoutMs, &d.RecoveryTimeoutMs},
		{&e.RecoveryBackoffMs, &d.RecoveryBackoffMs}, {&e.ServerLackOfAckTimeoutMs, &d.ServerLackOfAckTimeoutMs},
		{&e.FlushTimeoutMs, &d.FlushTimeoutMs}, {&e.ConnectionTimeoutMs, &d.ConnectionTimeoutMs},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	if e.RecoveryRetries == 0 {
		e.RecoveryRetries = d.RecoveryRetries
	}
	return e
}

// arrowOptions translates effective options for the Flight stream.
func arrowOptions(o ArrowStreamConfigurationOptions) ([]arrowflight.Option, error) {
	var codec arrowflight.Compression
	switch o.IPCCompression {
	case IPCCompressionDefault, IPCCompressionNone:
		codec = arrowflight.CompressionNone
	case IPCCompressionLZ4Frame:
		codec = arrowflight.CompressionLZ4
	case IPCCompressionZstd:
		codec = arrowflight.CompressionZstd
	default:
		return nil, fatal("Invalid argument: unknown IPC compression type.")
	}
	batches := int(min(o.MaxInflightBatches, math.MaxInt32))
	opts := []arrowflight.Option{
		arrowflight.WithCompression(codec),
		arrowflight.WithMaxInflight(batches, inflightBytes),
		arrowflight.WithTimeouts(millis(o.RecoveryTimeoutMs), millis(o.ServerLackOfAckTimeoutMs), millis(o.FlushTimeoutMs)),
	}
	switch o.Recovery {
	case RecoveryEnabled:
		backoff := millis(o.RecoveryBackoffMs)
		opts = append(opts, arrowflight.WithRetries(int(o.RecoveryRetries)),
			arrowflight.WithBackoff(zbstream.Backoff{Initial: backoff, Max: backoff}))
	case RecoveryDisabled:
		opts = append(opts, arrowflight.WithoutRecovery())
	default:
		return nil, fatal("Invalid argument: unknown recovery setting.")
	}
	grace := time.Duration(math.MaxInt64) // as long as the server announces
	if p := o.StreamPausedMaxWaitTimeMs; p != nil {
		grace = millis(*p)
	}
	return append(opts, arrowflight.WithMaxGrace(grace)), nil
}
