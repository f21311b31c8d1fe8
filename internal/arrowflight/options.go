package arrowflight

import (
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
)

// Compression is the codec of the IPC bodies of the frames a stream
// sends. The server decompresses what the IPC message header names, so
// the choice is the client's alone.
type Compression uint8

// The IPC body codecs.
const (
	// CompressionNone sends bodies as they are (the default).
	CompressionNone Compression = iota
	// CompressionLZ4 sends bodies in the LZ4 frame format.
	CompressionLZ4
	// CompressionZstd sends bodies compressed with Zstandard.
	CompressionZstd
)

// Defaults of a stream's options, the same as the other streams' where
// they have one (core's defaults, docs/protocol.md §7).
const (
	DefaultMaxInflightBatches = core.DefaultMaxInflightCalls
	DefaultMaxInflightBytes   = core.DefaultMaxInflightBytes
	DefaultOpenTimeout        = core.DefaultOpenTimeout
	DefaultAckTimeout         = core.DefaultAckTimeout
	DefaultCloseTimeout       = core.DefaultCloseTimeout
	DefaultMaxGrace           = core.DefaultMaxGrace
	DefaultRetries            = core.DefaultRetries
)

// Option configures a stream in New.
type Option func(*options) error

type options struct {
	compression   Compression
	maxBatches    int
	maxBytes      int64
	openTimeout   time.Duration
	ackTimeout    time.Duration
	closeTimeout  time.Duration
	maxGrace      time.Duration
	retries       int
	noRecovery    bool
	backoff       zbstream.Backoff
	observer      zbstream.Observer
	maxFrameBytes int
	seed          uint64
}

func defaultOptions() options {
	return options{
		maxBatches:    DefaultMaxInflightBatches,
		maxBytes:      DefaultMaxInflightBytes,
		openTimeout:   DefaultOpenTimeout,
		ackTimeout:    DefaultAckTimeout,
		closeTimeout:  DefaultCloseTimeout,
		maxGrace:      DefaultMaxGrace,
		retries:       DefaultRetries,
		backoff:       core.DefaultConfig(core.Ephemeral, core.RecordJSON).Backoff, // the other streams'
		maxFrameBytes: MaxFrameBytes,
	}
}

func configErr(field, reason string) error {
	return &zbstream.ConfigError{Field: field, Reason: reason}
}

// WithCompression sets the codec of the IPC bodies (default
// CompressionNone). Bodies are compressed at ingest, so the frames kept
// for replay stay compressed too.
func WithCompression(c Compression) Option {
	return func(o *options) error {
		if c > CompressionZstd {
			return configErr("compression", "is not one of CompressionNone, CompressionLZ4, CompressionZstd")
		}
		o.compression = c
		return nil
	}
}

// WithMaxInflight bounds the batches accepted and not yet durable, by
// count and by the bytes of their encoded frames: IngestBatch waits for
// room. A single batch larger than bytes is refused with a
// *zbstream.LimitError.
func WithMaxInflight(batches int, bytes int64) Option {
	return func(o *options) error {
		if batches <= 0 || bytes <= 0 {
			return configErr("max inflight", "must be positive")
		}
		o.maxBatches, o.maxBytes = batches, bytes
		return nil
	}
}

// WithTimeouts sets the open timeout (the ready signal's wait), the ack
// timeout (how long frames in flight may see no ack advance) and the
// close timeout (how long Close waits for durability); zero keeps a
// default.
func WithTimeouts(open, ack, close time.Duration) Option {
	return func(o *options) error {
		if open < 0 || ack < 0 || close < 0 {
			return configErr("timeouts", "must not be negative")
		}
		for _, p := range []struct {
			d   time.Duration
			dst *time.Duration
		}{{open, &o.openTimeout}, {ack, &o.ackTimeout}, {close, &o.closeTimeout}} {
			if p.d > 0 {
				*p.dst = p.d
			}
		}
		return nil
	}
}

// WithMaxGrace caps the grace a rotation notice may ask for (default 15
// minutes): the longest the stream keeps a connection it was asked to
// leave, waiting for the acks of what it sent there.
func WithMaxGrace(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return configErr("max grace", "must not be negative")
		}
		o.maxGrace = d
		return nil
	}
}

// WithRetries sets the reconnect attempts of one recovery episode
// (default 4); durable progress makes the budget whole again.
func WithRetries(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return configErr("retries", "must not be negative")
		}
		o.retries = n
		return nil
	}
}

// WithBackoff sets the delay before each reconnect attempt: drawn
// uniformly from [0, min(Max, Initial × Multiplier^(n−1))] for attempt n
// of an episode. Zero fields keep their defaults, the other streams' (500ms,
// 30s, 2).
func WithBackoff(b zbstream.Backoff) Option {
	return func(o *options) error {
		if b.Initial < 0 || b.Max < 0 || (b.Multiplier != 0 && b.Multiplier < 1) {
			return configErr("backoff", "needs durations >= 0 and a multiplier >= 1")
		}
		if b.Initial > 0 {
			o.backoff.Initial = b.Initial
		}
		if b.Max > 0 {
			o.backoff.Max = b.Max
		}
		if b.Multiplier != 0 {
			o.backoff.Multiplier = b.Multiplier
		}
		return nil
	}
}

// WithoutRecovery fails the stream at the first connection failure. A
// rotation notice still moves it to a new connection: that is no failure.
func WithoutRecovery() Option {
	return func(o *options) error {
		o.noRecovery = true
		return nil
	}
}

// WithObserver reports the stream's events to obs: a batch is one call,
// its rows the call's records. An obs that implements
// zbstream.EventObserver gets the events with their details.
func WithObserver(obs zbstream.Observer) Option {
	return func(o *options) error {
		o.observer = obs
		return nil
	}
}

// WithMaxFrameBytes lowers the size of a data frame below MaxFrameBytes
// (for tests, and for servers with a lower limit). Batches are split into
// frames of at most n bytes as the FlightData message is encoded.
func WithMaxFrameBytes(n int) Option {
	return func(o *options) error {
		if n < 1024 || n > MaxFrameBytes {
			return configErr("max frame bytes", "must be within [1024, MaxFrameBytes]")
		}
		o.maxFrameBytes = n
		return nil
	}
}

// WithSeed sets the seed of the backoff's jitter, so that a test gets the
// same delays every run (default: from the clock at New).
func WithSeed(seed uint64) Option {
	return func(o *options) error {
		o.seed = seed
		return nil
	}
}
