package spool

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/record"
)

// Defaults of Options.
const (
	DefaultMaxBytes     = 1 << 30
	DefaultSegmentBytes = 64 << 20
	// DefaultMaxCallBytes is the protocol's per-call limit.
	DefaultMaxCallBytes = 10<<20 - 64<<10
	// maxGroupBytes bounds what one group commit writes.
	maxGroupBytes = 8 << 20
)

// NoOffset is the offset of a call that got none (an empty batch, or an
// error).
const NoOffset int64 = -1

// Options configure Open.
type Options struct {
	// Dir is the spool's directory, created if missing. It holds one
	// spool: one stream, one process at a time.
	Dir string
	// Table is the table the stream writes (catalog.schema.table).
	Table string
	// ProtoMessage makes the stream a proto stream of the message's type
	// (zbstream.WithProtoMessage); nil: JSON records.
	ProtoMessage zbstream.ProtoMessage
	// AvroSchema makes the stream an Avro stream of that writer schema
	// (zbstream.WithAvroSchema): records are raw Avro binary datums. The
	// spool keeps the schema in its header and checks it at every Open, as
	// it checks a proto message; it does not decode the datums (the
	// library has no Avro dependency), so a datum the server refuses fails
	// the stream when it is sent. Excludes ProtoMessage.
	AvroSchema string
	// StreamID adopts an existing persistent stream when the spool is
	// new; empty: a new stream is created. An existing spool must be
	// opened with its own stream id or an empty one.
	StreamID string
	// MaxBytes bounds the log on disk (default 1 GiB). A call that does
	// not fit waits until entries are durable on the server and their
	// segments are removed: backpressure, never a dropped call.
	MaxBytes int64
	// SegmentBytes is the size at which the log starts a new segment file
	// (default 64 MiB, at most MaxBytes/4). Segments are removed whole.
	SegmentBytes int64
	// MaxCallBytes bounds the payload of one call (default the protocol's
	// 10 MiB - 64 KiB, at most 32 MiB); the stream gets the same limit.
	MaxCallBytes int64
	// StreamOptions configure the stream (recovery, timeouts, window,
	// callbacks). The spool adds WithProtoMessage or WithAvroSchema, WithMaxCallBytes and
	// WithClientRequestID after them.
	StreamOptions []zbstream.StreamOption
}

// Spool is a persistent stream whose calls go through a local write-ahead
// log first. Every method is safe for concurrent use.
type Spool struct {
	opts   Options
	stream *zbstream.Stream
	check  *record.Checker // the records' rules, set by Open
	lock   *os.File
	w      *wal // owned by the committer goroutine once Open returns

	// ctx ends hand-offs to the stream when Close gives up.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []*call
	closing bool
	err     error // sticky: the spool failed
	wake    chan struct{}
	done    chan struct{} // the committer has ended

	closeOnce sync.Once
	closeErr  error

	st struct {
		calls, records, syncs, syncedBytes atomic.Int64
		bytes, segments                    atomic.Int64
		resent, dropped, torn, removed     atomic.Int64
		lostFirst, lostCount               atomic.Int64
	}
}

// call is one ingest call waiting for the committer.
type call struct {
	records [][]byte
	batch   bool
	size    int // upper bound of its encoding
	taken   bool
	gone    bool // its caller left before it was taken
	done    chan result
}

type result struct {
	off int64
	err error
}

// Open opens the spool in opts.Dir, creating it (and a persistent stream)
// if it is new, or recovering it: the log's torn tail is cut off, the
// stream is resumed by its id, entries at or below the server's watermark
// are dropped and the others are handed to the stream again, in order,
// under their offsets. Open returns once they are handed over; Flush waits
// until they are durable.
func Open(ctx context.Context, client *zbstream.Client, opts Options) (*Spool, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := makeDir(opts.Dir); err != nil {
		return nil, err
	}
	lock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Spool{opts: opts, lock: lock, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if err := s.open(ctx, client); err != nil {
		if s.stream != nil {
			cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			cancel() // nothing of this spool must be sent: abandon at once
			_ = s.stream.Close(cctx)
		}
		if s.w != nil {
			s.w.close()
		}
		lock.Close()
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.commit()
	return s, nil
}

func (o *Options) defaults() error {
	bad := func(field, reason string) error {
		return &zbstream.ConfigError{Field: field, Reason: reason}
	}
	if o.Dir == "" {
		return bad("Dir", "must not be empty")
	}
	if o.Table == "" {
		return bad("Table", "must not be empty")
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxCallBytes == 0 {
		o.MaxCallBytes = DefaultMaxCallBytes
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = min(DefaultSegmentBytes, o.MaxBytes/4)
	}
	switch {
	case o.MaxCallBytes < 0 || o.MaxCallBytes > maxCallLimit:
		return bad("MaxCallBytes", fmt.Sprintf("must be between 1 and %d", maxCallLimit))
	case o.MaxBytes < 4<<10:
		return bad("MaxBytes", "must be at least 4 KiB")
	case o.SegmentBytes <= 0 || o.SegmentBytes > o.MaxBytes/2:
		return bad("SegmentBytes", "must be positive and at most MaxBytes/2")
	}
	return nil
}

// Wait blocks until offset is durable on the server (see
// zbstream.Stream.Wait).
func (s *Spool) Wait(ctx context.Context, offset int64) error { return s.stream.Wait(ctx, offset) }

// Flush waits until every call that returned before it was called is
// durable on the server (see zbstream.Stream.Flush).
func (s *Spool) Flush(ctx context.Context) error { return s.stream.Flush(ctx) }

// StreamID returns the stream's id, which the spool keeps in its header.
func (s *Spool) StreamID() string { return s.stream.StreamID() }

// LastDurable returns the highest offset durable on the server.
func (s *Spool) LastDurable() int64 { return s.stream.LastDurable() }

// Stream returns the spool's stream for reading its state (Stats, Err,
// Done, Unacked). Ingesting into it directly breaks the spool: the next
// call fails with ErrOffsetMismatch.
func (s *Spool) Stream() *zbstream.Stream { return s.stream }

// Err returns the error the spool failed with, or nil.
func (s *Spool) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops taking calls, waits until the calls already made are in the
// log and handed to the stream, closes the stream (which waits until they
// are durable), removes the segments that are durable and releases the
// directory. What is not durable stays in the log for the next Open. Close
// is idempotent; if ctx ends first, the stream is abandoned (see
// zbstream.Stream.Close) and the log keeps everything.
func (s *Spool) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
		select {
		case <-s.done:
		case <-ctx.Done():
			s.cancel()
			<-s.done
		}
		err := s.stream.Close(ctx)
		s.cancel()
		if _, terr := s.w.trim(s.stream.LastDurable()); err == nil {
			err = terr
		}
		if cerr := s.w.close(); err == nil && cerr != nil {
			err = cerr
		}
		s.publish()
		s.lock.Close()
		if err == nil {
			err = s.Err()
		}
		s.closeErr = err
	})
	return s.closeErr
}

// Stats counts what the spool has done.
type Stats struct {
	// Calls and Records written to the log since Open.
	Calls, Records int64
	// Syncs is the number of group commits (one fsync each) and
	// SyncedBytes what they wrote; Calls/Syncs is the group size.
	Syncs, SyncedBytes int64
	// Bytes and Segments are the log's size on disk now.
	Bytes, Segments int64
	// At Open: Resent entries handed to the stream again, Dropped entries
	// found durable on the server, TornBytes cut off the log's tail.
	Resent, Dropped, TornBytes int64
	// RemovedSegments counts segments removed once durable.
	RemovedSegments int64
	// Lost is set by the first Open after a Repair: the offsets the
	// repair moved aside that the server does not hold. The calls that
	// had them are lost, and new calls get these offsets again (a
	// stream's offsets are dense). Repair's report listed them as at
	// stake; this is the exact part.
	Lost Offsets
}

// Stats returns a snapshot of the spool's counters.
func (s *Spool) Stats() Stats {
	return Stats{
		Calls: s.st.calls.Load(), Records: s.st.records.Load(),
		Syncs: s.st.syncs.Load(), SyncedBytes: s.st.syncedBytes.Load(),
		Bytes: s.st.bytes.Load(), Segments: s.st.segments.Load(),
		Resent: s.st.resent.Load(), Dropped: s.st.dropped.Load(), TornBytes: s.st.torn.Load(),
		RemovedSegments: s.st.removed.Load(),
		Lost:            Offsets{First: s.st.lostFirst.Load(), Count: s.st.lostCount.Load()},
	}
}
