package arrowstream

import (
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/internal/arrowflight"
)

// Compression is the codec of the IPC bodies of the frames a stream
// sends. The server decompresses what the IPC message header names, so
// the choice is the client's alone.
type Compression = arrowflight.Compression

// The IPC body codecs.
const (
	// CompressionNone sends bodies as they are (the default).
	CompressionNone = arrowflight.CompressionNone
	// CompressionLZ4 sends bodies in the LZ4 frame format.
	CompressionLZ4 = arrowflight.CompressionLZ4
	// CompressionZstd sends bodies compressed with Zstandard.
	CompressionZstd = arrowflight.CompressionZstd
)

// Defaults of a stream's options, the same as the other streams' where
// they have one (docs/protocol.md §7).
const (
	DefaultMaxInflightBatches = arrowflight.DefaultMaxInflightBatches
	DefaultMaxInflightBytes   = arrowflight.DefaultMaxInflightBytes
	DefaultOpenTimeout        = arrowflight.DefaultOpenTimeout
	DefaultAckTimeout         = arrowflight.DefaultAckTimeout
	DefaultCloseTimeout       = arrowflight.DefaultCloseTimeout
	DefaultMaxGrace           = arrowflight.DefaultMaxGrace
	DefaultRetries            = arrowflight.DefaultRetries
)

// Option configures a stream in New.
type Option = arrowflight.Option

// WithCompression sets the codec of the IPC bodies (default
// CompressionNone). Bodies are compressed at ingest, so the frames kept
// for replay stay compressed too.
func WithCompression(c Compression) Option { return arrowflight.WithCompression(c) }

// WithMaxInflight bounds the batches accepted and not yet durable, by
// count and by the bytes of their encoded frames: IngestBatch waits for
// room. A single batch larger than bytes is refused with a
// *zbstream.LimitError.
func WithMaxInflight(batches int, bytes int64) Option {
	return arrowflight.WithMaxInflight(batches, bytes)
}

// WithTimeouts sets the open timeout (the ready signal's wait), the ack
// timeout (how long frames in flight may see no ack advance) and the
// close timeout (how long Close waits for durability); zero keeps a
// default.
func WithTimeouts(open, ack, close time.Duration) Option {
	return arrowflight.WithTimeouts(open, ack, close)
}

// WithMaxGrace caps the grace a rotation notice may ask for (default 15
// minutes): the longest the stream keeps a connection it was asked to
// leave, waiting for the acks of what it sent there.
func WithMaxGrace(d time.Duration) Option { return arrowflight.WithMaxGrace(d) }

// WithRetries sets the reconnect attempts of one recovery episode
// (default 4); durable progress makes the budget whole again.
func WithRetries(n int) Option { return arrowflight.WithRetries(n) }

// WithBackoff sets the delay before each reconnect attempt: drawn
// uniformly from [0, min(Max, Initial × Multiplier^(n−1))] for attempt n
// of an episode. Zero fields keep their defaults, the other streams' (500ms,
// 30s, 2).
func WithBackoff(b zbstream.Backoff) Option { return arrowflight.WithBackoff(b) }

// WithoutRecovery fails the stream at the first connection failure. A
// rotation notice still moves it to a new connection: that is no failure.
func WithoutRecovery() Option { return arrowflight.WithoutRecovery() }

// WithObserver reports the stream's events to obs: a batch is one call,
// its rows the call's records. An obs that implements
// zbstream.EventObserver gets the events with their details.
func WithObserver(obs zbstream.Observer) Option { return arrowflight.WithObserver(obs) }

// WithMaxFrameBytes lowers the size of a data frame below MaxFrameBytes
// (for tests, and for servers with a lower limit). Batches are split into
// frames of at most n bytes as the FlightData message is encoded.
func WithMaxFrameBytes(n int) Option { return arrowflight.WithMaxFrameBytes(n) }

// WithSeed sets the seed of the backoff's jitter, so that a test gets the
// same delays every run (default: from the clock at New).
func WithSeed(seed uint64) Option { return arrowflight.WithSeed(seed) }
