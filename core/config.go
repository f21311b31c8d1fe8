package core

import (
	"math"
	"time"
)

// Config fixes a Machine's behaviour. Start from DefaultConfig: every limit
// must be set, and a zero or negative one is refused rather than read as
// "default", so a forgotten field is an error instead of a surprise.
type Config struct {
	// Kind is Ephemeral or Persistent.
	Kind Kind
	// RecordType is the type of every record in the stream.
	RecordType RecordType

	// StreamID, for a persistent stream, resumes an existing durable stream
	// from a fresh process instead of creating one. Numbering then continues
	// at the server's watermark + 1.
	StreamID string
	// History, with StreamID, is what this process already knows of the
	// stream from an earlier Machine of its own (a Writer closes a table's
	// stream and opens it again with a new Machine): the first resume is
	// then validated against it as a reconnect's is (protocol.md §5.3),
	// so a stream that another writer moved meanwhile fails before
	// anything is sent. nil: a fresh process, which knows nothing yet.
	History *History
	// ClientRequestID makes a persistent create idempotent: every create
	// attempt of this machine carries it, so a create whose response was lost
	// can be retried without orphaning a durable stream. Required to create a
	// persistent stream. It must be unique per stream (16 random bytes from
	// crypto/rand, say): the core has no randomness of its own to make one,
	// and two writers sharing one would share a stream.
	ClientRequestID string

	// MaxInflightCalls bounds buffered plus in-flight ingest calls.
	MaxInflightCalls int
	// MaxInflightBytes bounds the payload bytes of buffered plus in-flight
	// calls. It must be at least MaxCallBytes. A driver may count more
	// against it than the payload: package io counts what it keeps for each
	// call and record too (io.CallCost, io.RecordCost).
	MaxInflightBytes int64
	// MaxCallBytes bounds the bytes of one ingest call as the request
	// carries its records: each record with its framing (FramedSize).
	MaxCallBytes int64

	// OpenTimeout bounds each open attempt.
	OpenTimeout time.Duration
	// AckTimeout: records in flight with no ack progress for this long is a
	// retryable failure.
	AckTimeout time.Duration
	// CloseTimeout bounds how long Close waits for accepted records to become
	// durable before failing the rest with ErrCloseTimeout.
	CloseTimeout time.Duration
	// MaxGrace caps how long an ephemeral stream keeps draining acks after a
	// close signal before it reconnects; 0 reconnects at once.
	MaxGrace time.Duration

	// DisableRecovery makes every connection failure terminal: no
	// reconnect after a failure, a timeout or a clean end of stream. The
	// one exception is not recovery but part of opening: an
	// UNAUTHENTICATED refusal of the very first open is still retried once,
	// at once, with fresh credentials (protocol.md §5.5), as a token that
	// expired in a cache is not a failure of the stream. A server rotation
	// (close_stream_signal) is not a failure either and still reconnects.
	DisableRecovery bool
	// Retries is the number of reconnect attempts one recovery episode may
	// make (protocol.md §5.5). An episode starts with a retryable failure
	// and ends with durable progress (an ack that advances, or a resume
	// watermark that completes something) or with an open that finds
	// nothing pending: with nothing at stake there is nothing to make
	// progress on, so an idle stream whose connection flaps now and then
	// never exhausts its retries. A server rotation costs no attempt.
	Retries int
	// Backoff shapes the delay before each reconnect attempt.
	Backoff Backoff

	// Seed drives the machine's only randomness, the backoff jitter: same
	// seed, same inputs, same outputs.
	Seed uint64
}

// History is what a process knows of a persistent stream it had open
// (protocol.md §5.3): Durable, its ack floor (the highest offset it saw
// become durable, or NoOffset), and Attempted, the highest offset it ever
// handed to a transport (at least Durable).
type History struct {
	Durable, Attempted int64
}

// Backoff is exponential backoff with full jitter: before attempt n the delay
// is drawn uniformly from [0, min(Max, Initial*Multiplier^(n-1))].
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
}

// Defaults, from the public Zerobus SDKs where they have one.
const (
	DefaultMaxInflightCalls = 1_000_000
	DefaultMaxInflightBytes = 256 << 20
	DefaultMaxCallBytes     = 10<<20 - 64<<10
	DefaultOpenTimeout      = 15 * time.Second
	DefaultAckTimeout       = 60 * time.Second
	DefaultCloseTimeout     = 5 * time.Minute
	DefaultMaxGrace         = 15 * time.Minute
	DefaultRetries          = 4
)

// DefaultConfig returns a complete Config for a stream of the given kind and
// record type.
func DefaultConfig(kind Kind, rt RecordType) Config {
	return Config{
		Kind:             kind,
		RecordType:       rt,
		MaxInflightCalls: DefaultMaxInflightCalls,
		MaxInflightBytes: DefaultMaxInflightBytes,
		MaxCallBytes:     DefaultMaxCallBytes,
		OpenTimeout:      DefaultOpenTimeout,
		AckTimeout:       DefaultAckTimeout,
		CloseTimeout:     DefaultCloseTimeout,
		MaxGrace:         DefaultMaxGrace,
		Retries:          DefaultRetries,
		Backoff:          Backoff{Initial: 500 * time.Millisecond, Max: 30 * time.Second, Multiplier: 2},
		Seed:             1,
	}
}

// Validate reports the first invalid field as a *ConfigError.
func (c *Config) Validate() error {
	bad := func(field, reason string) error { return &ConfigError{Field: field, Reason: reason} }
	switch {
	case c.Kind != Ephemeral && c.Kind != Persistent:
		return bad("Kind", "must be Ephemeral or Persistent")
	case c.RecordType != RecordProto && c.RecordType != RecordJSON && c.RecordType != RecordAvro:
		return bad("RecordType", "must be RecordProto, RecordJSON or RecordAvro")
	case c.StreamID != "" && c.Kind != Persistent:
		return bad("StreamID", "is only for persistent streams")
	case c.Kind == Persistent && c.StreamID == "" && c.ClientRequestID == "":
		return bad("ClientRequestID", "is required to create a persistent stream (a unique random id per stream)")
	case c.History != nil && c.StreamID == "":
		return bad("History", "is only for a stream resumed by StreamID")
	case c.History != nil && (c.History.Durable < NoOffset || c.History.Attempted < c.History.Durable):
		return bad("History", "must have NoOffset <= Durable <= Attempted")
	case c.MaxInflightCalls <= 0:
		return bad("MaxInflightCalls", "must be positive")
	case c.MaxCallBytes <= 0:
		return bad("MaxCallBytes", "must be positive")
	case c.MaxInflightBytes < c.MaxCallBytes:
		return bad("MaxInflightBytes", "must be at least MaxCallBytes")
	case c.OpenTimeout <= 0:
		return bad("OpenTimeout", "must be positive")
	case c.AckTimeout <= 0:
		return bad("AckTimeout", "must be positive")
	case c.CloseTimeout <= 0:
		return bad("CloseTimeout", "must be positive")
	case c.MaxGrace < 0:
		return bad("MaxGrace", "must not be negative")
	case c.Retries < 0:
		return bad("Retries", "must not be negative")
	case c.Backoff.Initial <= 0:
		return bad("Backoff.Initial", "must be positive")
	case c.Backoff.Max < c.Backoff.Initial:
		return bad("Backoff.Max", "must be at least Backoff.Initial")
	case !(c.Backoff.Multiplier >= 1) || math.IsInf(c.Backoff.Multiplier, 0):
		return bad("Backoff.Multiplier", "must be a finite number >= 1")
	}
	return nil
}
