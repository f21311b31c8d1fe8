package spool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

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
	// callbacks). The spool adds WithProtoMessage, WithMaxCallBytes and
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

// makeDir creates dir if it is missing, and makes its name durable (its
// parent synced): a spool whose directory a power loss could take away
// would lose calls that returned.
func makeDir(dir string) error {
	if info, err := os.Stat(dir); err == nil {
		if !info.IsDir() {
			return fmt.Errorf("spool: %s is not a directory", dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("spool: creating the spool directory: %w", err)
	}
	return syncDir(filepath.Dir(filepath.Clean(dir)))
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

// wantMeta is the header the options describe.
func (o *Options) wantMeta() (meta, error) {
	m := meta{Table: o.Table, RecordType: "json"}
	if o.ProtoMessage != nil {
		md := o.ProtoMessage.ProtoReflect().Descriptor()
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToDescriptorProto(md))
		if err != nil {
			return m, fmt.Errorf("spool: encoding the descriptor of %s: %w", md.FullName(), err)
		}
		m.RecordType, m.Message, m.Descriptor = "proto", string(md.FullName()), b
	}
	return m, nil
}

// check compares the stored header with the one the options describe.
func (m *meta) check(want meta, streamID string) error {
	switch {
	case m.Table != want.Table:
		return &MismatchError{Field: "table", Spool: m.Table, Given: want.Table}
	case m.RecordType != want.RecordType:
		return &MismatchError{Field: "record type", Spool: m.RecordType, Given: want.RecordType}
	case m.Message != want.Message:
		return &MismatchError{Field: "message", Spool: m.Message, Given: want.Message}
	case streamID != "" && m.StreamID != "" && streamID != m.StreamID:
		return &MismatchError{Field: "stream id", Spool: m.StreamID, Given: streamID}
	}
	if !record.SameDescriptor(m.Descriptor, want.Descriptor) {
		return &MismatchError{Field: "descriptor", Spool: fmt.Sprintf("%s (%d bytes)", m.Message, len(m.Descriptor)),
			Given: fmt.Sprintf("%s (%d bytes), a changed message", want.Message, len(want.Descriptor))}
	}
	return nil
}

// open does Open's work under the lock.
func (s *Spool) open(ctx context.Context, client *zbstream.Client) error {
	o := &s.opts
	want, err := o.wantMeta()
	if err != nil {
		return err
	}
	if s.check, err = newChecker(want); err != nil {
		return err
	}
	m, ok, err := readMeta(o.Dir)
	if err != nil {
		return err
	}
	gapFrom := int64(-1)
	if ok && m.Repair != nil {
		gapFrom = m.Repair.From
	}
	if !ok {
		// Checked before openWAL cuts anything.
		if segs, err := listSegments(o.Dir); err != nil {
			return err
		} else if len(segs) > 0 {
			return &CorruptError{File: o.Dir, Reason: "log segments without a header"}
		}
	}
	w, last, err := openWAL(o.Dir, o.SegmentBytes, gapFrom)
	if err != nil {
		return err
	}
	s.w = w
	s.st.torn.Store(w.tornBytes)
	if !ok {
		m = want
		var b [16]byte
		_, _ = rand.Read(b[:])
		m.RequestID = hex.EncodeToString(b[:])
		if o.StreamID == "" {
			// The idempotency key is made durable before the create.
			if err := writeMeta(o.Dir, m); err != nil {
				return err
			}
		}
	} else if err := m.check(want, o.StreamID); err != nil {
		return err
	}

	sopts := append(append([]zbstream.StreamOption{}, o.StreamOptions...), zbstream.WithMaxCallBytes(o.MaxCallBytes))
	if o.ProtoMessage != nil {
		sopts = append(sopts, zbstream.WithProtoMessage(o.ProtoMessage))
	}
	if m.StreamID == "" && o.StreamID == "" {
		// The request id was made durable before the create: a crash
		// before the id below is written gets the same stream back.
		s.stream, err = client.CreatePersistentStream(ctx, o.Table, append(sopts, zbstream.WithClientRequestID(m.RequestID))...)
		if err != nil {
			return fmt.Errorf("spool: creating the stream: %w", err)
		}
		m.StreamID = s.stream.StreamID()
		if err := writeMeta(o.Dir, m); err != nil {
			return err
		}
	} else {
		id := m.StreamID
		if id == "" {
			id = o.StreamID // a new spool adopts the stream once it resumed
		}
		s.stream, err = client.ResumeStream(ctx, o.Table, id, sopts...)
		if err != nil {
			return fmt.Errorf("spool: resuming stream %s: %w", id, err)
		}
		if m.StreamID == "" {
			m.StreamID = id
			if err := writeMeta(o.Dir, m); err != nil {
				return err
			}
		}
	}
	wm := s.stream.LastDurable()

	if len(w.segs) == 0 {
		if err := w.start(wm + 1); err != nil {
			return err
		}
		if err := s.repaired(m, wm); err != nil {
			return err
		}
		s.publish()
		return nil
	}
	next := w.next()
	if wm > next-1 && m.Repair == nil {
		return &WatermarkError{StreamID: m.StreamID, Watermark: wm, First: w.first(), Last: next - 1}
	}
	if wm > next-1 {
		// A repair moved the log's end aside and the server holds some of
		// it: continue after the watermark, so that no new call gets an
		// offset the server holds. Everything the log keeps is at or
		// below it: the new segment's name is made durable before the old
		// ones are removed, and their removal before the repair record
		// is cleared (a crash in between leaves the gap that scanLog
		// tolerates while the record is there).
		if err := w.roll(wm + 1); err != nil {
			return err
		}
		last = nil
		if _, err := w.trim(wm); err != nil {
			return err
		}
		if err := syncDir(o.Dir); err != nil {
			return err
		}
		next = wm + 1
	}
	if _, err := w.trim(wm); err != nil {
		return err
	}
	if next-1 > wm && w.first() > wm+1 {
		return &WatermarkError{StreamID: m.StreamID, Watermark: wm, First: w.first(), Last: next - 1}
	}
	// Hand the entries above the watermark to the stream, in order: the
	// sealed segments (read whole, a torn entry in one is corruption), then
	// the active one (already read, its tail already cut).
	for i, sg := range w.segs {
		ents := last
		if i < len(w.segs)-1 {
			if ents, err = readSegment(sg); err != nil {
				return err
			}
			if sg.next != w.segs[i+1].first {
				return &CorruptError{File: sg.path, Reason: fmt.Sprintf("segment ends at offset %d, the next starts at %d", sg.next-1, w.segs[i+1].first)}
			}
		}
		for j := range ents {
			e := &ents[j]
			if e.offset <= wm {
				s.st.dropped.Add(1)
				continue
			}
			if err := s.handOff(ctx, e); err != nil {
				return err
			}
			s.st.resent.Add(1)
		}
	}
	if err := s.repaired(m, wm); err != nil {
		return err
	}
	if err := w.openActive(); err != nil {
		return err
	}
	s.publish()
	return nil
}

// repaired ends a repair's reconciliation, once the log continues after
// the server's watermark wm: the offsets the repair moved aside that the
// server does not hold are lost (new calls get them again, since the
// stream's offsets are dense); they go to Stats.Lost, and the repair
// record is cleared.
func (s *Spool) repaired(m meta, wm int64) error {
	r := m.Repair
	if r == nil {
		return nil
	}
	lost := span(max(r.From, wm+1), r.To)
	s.st.lostFirst.Store(lost.First)
	s.st.lostCount.Store(lost.Count)
	m.Repair = nil
	return writeMeta(s.opts.Dir, m)
}

// handOff gives one synced entry to the stream and checks that the stream
// assigned it the log's offset.
func (s *Spool) handOff(ctx context.Context, e *entry) error {
	var (
		off int64
		err error
	)
	if e.batch {
		off, err = s.stream.IngestBatch(ctx, e.records)
	} else {
		off, err = s.stream.IngestRecord(ctx, e.records[0])
	}
	if err != nil {
		return err
	}
	if off != e.offset {
		return fmt.Errorf("%w: the log gave offset %d, the stream %d", ErrOffsetMismatch, e.offset, off)
	}
	return nil
}

// publish updates the size statistics (committer goroutine).
func (s *Spool) publish() {
	s.st.bytes.Store(s.w.bytes)
	s.st.segments.Store(int64(len(s.w.segs)))
}

// IngestRecord writes one record to the log as one call and returns its
// offset once the entry is synced and handed to the stream: from then on
// the record lands exactly once, whatever happens to this process, as long
// as the spool is opened again. Concurrent calls share one sync. The
// stream keeps the record by reference until it is durable: do not modify
// it.
//
// A record the server would refuse for its content (not a JSON object, or
// not a valid message of Options.ProtoMessage) is refused with an error
// wrapping zbstream.ErrRecordType before anything is written; a call over
// the per-call limit, or that cannot fit in the spool, with ErrTooLarge.
//
// When the log is full (Options.MaxBytes) the call blocks until the server
// has made enough entries durable, or ctx ends. If ctx ends, or the call
// fails, the record lands at most once (the next Open sends whatever the
// log holds).
func (s *Spool) IngestRecord(ctx context.Context, record []byte) (int64, error) {
	return s.ingest(ctx, [][]byte{record}, false)
}

// IngestBatch writes records to the log as one call under one offset, as
// IngestRecord does. An empty batch gets no offset: NoOffset and a nil
// error.
func (s *Spool) IngestBatch(ctx context.Context, records [][]byte) (int64, error) {
	return s.ingest(ctx, records, true)
}

func (s *Spool) ingest(ctx context.Context, records [][]byte, batch bool) (int64, error) {
	if err := s.usable(); err != nil {
		return NoOffset, err
	}
	if len(records) == 0 {
		return NoOffset, nil
	}
	if err := s.checkSize(records); err != nil {
		return NoOffset, err
	}
	if err := s.checkRecords(records); err != nil {
		return NoOffset, err
	}
	c := &call{records: records, batch: batch, size: encodedSize(records), done: make(chan result, 1)}
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return NoOffset, err
	}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case r := <-c.done:
		return r.off, r.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	if !c.taken {
		c.gone = true
		s.mu.Unlock()
		return NoOffset, context.Cause(ctx)
	}
	s.mu.Unlock()
	select {
	case r := <-c.done: // being written: the outcome is near
		return r.off, r.err
	default:
		return NoOffset, fmt.Errorf("%w (the call's entry is being written: it lands at most once)", context.Cause(ctx))
	}
}

// checkSize refuses a call the stream would refuse, before it reaches the
// log: an entry the stream cannot take must never be synced. The call is
// counted as the stream's limit counts it, as sent (record.CallSize).
func (s *Spool) checkSize(records [][]byte) error {
	if n := record.CallSize(records); n > s.opts.MaxCallBytes {
		return fmt.Errorf("%w: %d bytes as sent, the per-call limit is %d", ErrTooLarge, n, s.opts.MaxCallBytes)
	}
	if n := int64(encodedSize(records)); n > s.opts.MaxBytes-s.opts.SegmentBytes {
		return fmt.Errorf("%w: %d bytes in the log, the spool holds %d", ErrTooLarge, n, s.opts.MaxBytes)
	}
	return nil
}

func (s *Spool) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usableLocked()
}

func (s *Spool) usableLocked() error {
	switch {
	case s.err != nil:
		return fmt.Errorf("%w: %w", ErrFailed, s.err)
	case s.closing:
		return ErrClosed
	}
	return nil
}

// fail makes the spool fail with err (the first error wins) and fails
// every queued call.
func (s *Spool) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	q := s.queue
	s.queue = nil
	err = fmt.Errorf("%w: %w", ErrFailed, s.err)
	s.mu.Unlock()
	for _, c := range q {
		c.done <- result{NoOffset, err}
	}
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
