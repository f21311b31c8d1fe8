package io

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/zbstream/zbstream/core"
)

// Stream is one Zerobus stream run over a Transport: it owns a core.Machine
// and gives applications a blocking API that is safe for concurrent use.
//
// The machine is guarded by one mutex. Application goroutines take it to
// ingest, and so do the per-connection goroutines that report what the
// transport did: one goroutine per connection opens it and then reads its
// messages, one more sends. A timer goroutine fires the machine's deadlines.
// After every input the stream drains the machine's actions and re-arms the
// timer. Callbacks run on a goroutine of their own, never under the lock.
type Stream struct {
	t     Transport
	opts  Options
	kind  core.Kind
	rt    core.RecordType
	epoch time.Time // the origin of the Instants given to the machine

	mu    sync.Mutex
	at    core.Instant // the time of the inputs made under the current hold of mu (see lock)
	m     *core.Machine
	acts  []core.Action
	conns map[core.ConnID]*conn
	live  *conn // the connection the machine uses, if any

	timer      *time.Timer
	timerAt    core.Instant
	timerArmed bool

	sentHigh int64 // highest offset ever written: a write at or below it is a resend
	stats    Stats

	// events is Options.Observer when it is an EventObserver (nil
	// otherwise); calls is what it is told of each call when the call
	// ends; lastCode is what ended the last connection, the cause of the
	// next reconnect.
	events   EventObserver
	calls    callLog
	lastCode core.Code

	// arena holds the copies of accepted records (nil with
	// Options.NoCopy; a call the machine will refuse as too large is not
	// copied). strays counts the senders of connections the
	// stream has left that may still be in a Send: while any runs, no
	// arena memory is given back.
	arena    *recordArena
	strays   int
	finished bool // the machine has finished: no call is accepted any more
	closing  bool // Close was called

	// progress and space are closed, and cleared, when waiters may have
	// something to see: offsets completed or failed (progress), room in the
	// window or the callback queue (space). They are made only when somebody
	// waits, so the data path does not allocate.
	progress chan struct{}
	space    chan struct{}
	// lowCalls and lowBytes are the window's low-water mark: a window that
	// was full wakes its blocked callers once it has drained below both.
	lowCalls int
	lowBytes int64
	maxBytes int64 // the byte bound, which overBound applies to what calls keep

	openSeen bool          // opened has been closed
	opened   chan struct{} // closed once the first open succeeds
	done     chan struct{} // closed when the machine finishes
	err      error         // the terminal error; set before done is closed

	// idleIngest is set while an ingest that found nothing in flight
	// drains the machine's actions: its call, dispatched to an idle
	// IdleSender connection, is then written by the caller, and
	// writeHere names that connection (see sendHere).
	idleIngest bool
	writeHere  *conn

	cb callbacks
	wg sync.WaitGroup // the timer goroutine and every connection goroutine
}

// Open creates a stream over t and opens it: it returns once the server has
// answered the first create (or resume) and the stream accepts records. The
// first open is retried as cfg's recovery policy allows. If ctx ends first,
// or the open fails for good, Open returns the error and leaves no goroutine
// or connection behind.
//
// ctx bounds only the open; the stream lives until Close or failure.
func Open(ctx context.Context, t Transport, cfg core.Config, opts Options) (*Stream, error) {
	if t == nil {
		return nil, &core.ConfigError{Field: "Transport", Reason: "must not be nil"}
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := core.New(cfg)
	if err != nil {
		return nil, err
	}
	s := &Stream{
		t:        t,
		opts:     opts,
		kind:     cfg.Kind,
		rt:       cfg.RecordType,
		epoch:    time.Now(),
		m:        m,
		conns:    make(map[core.ConnID]*conn),
		timer:    time.NewTimer(time.Hour),
		sentHigh: core.NoOffset,
		opened:   make(chan struct{}),
		lowCalls: cfg.MaxInflightCalls - cfg.MaxInflightCalls/8,
		lowBytes: cfg.MaxInflightBytes - cfg.MaxInflightBytes/8,
		maxBytes: cfg.MaxInflightBytes,
		done:     make(chan struct{}),
	}
	if !opts.NoCopy {
		s.arena = newRecordArena(cfg.MaxInflightBytes)
		// A stream dropped without Close, or closed with records still
		// unacknowledged (they stay readable through Unacked), releases
		// its arena when nothing refers to it any more.
		runtime.AddCleanup(s, (*recordArena).free, s.arena)
	}
	s.events, _ = opts.Observer.(EventObserver)
	s.timer.Stop()
	s.cb.init(s, opts)
	s.wg.Add(1)
	go s.timerLoop()

	s.lock()
	err = s.m.Open(s.at)
	s.process()
	s.mu.Unlock()
	if err != nil {
		panic(fmt.Sprintf("zbstream: opening a new machine: %v", err))
	}

	select {
	case <-s.opened:
		return s, nil
	case <-s.done:
	case <-ctx.Done():
		s.abandon(fmt.Errorf("zbstream: open abandoned: %w", context.Cause(ctx)))
	}
	s.release(ctx)
	return nil, core.Errorf("opening the stream: %w", s.err)
}

// abandon fails the stream with a cause of the driver's own and waits for
// nothing.
func (s *Stream) abandon(cause error) {
	s.lock()
	defer s.mu.Unlock()
	if err := s.m.Fail(s.at, cause); err != nil {
		panic(fmt.Sprintf("zbstream: failing the stream: %v", err))
	}
	s.process()
}

// release waits, once the stream has finished, for its callbacks to drain
// (bounded by Options.CallbackDrain and ctx) and for every goroutine it
// started to end.
func (s *Stream) release(ctx context.Context) {
	<-s.done
	s.cb.drain(ctx, s.opts.CallbackDrain)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if calls, _ := s.m.Pending(); calls == 0 && s.arena != nil {
		// Nothing reads the copies now: release them at once rather than
		// when the stream is collected.
		s.arena.free()
	}
}

// lock takes the stream's mutex for an input to the machine and reads the
// clock once for it: s.at is the Instant of every input made under this
// hold. It is the only place the driver reads the time.
func (s *Stream) lock() {
	s.mu.Lock()
	s.at = core.Instant(time.Since(s.epoch))
}

// StreamID returns the server's id for the stream. An ephemeral stream gets
// a new id on every connection; a persistent stream keeps one for life.
func (s *Stream) StreamID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.StreamID()
}

// Kind returns the stream kind.
func (s *Stream) Kind() core.Kind { return s.kind }

// RecordType returns the type of every record in the stream.
func (s *Stream) RecordType() core.RecordType { return s.rt }

// Err returns the error the stream failed with, or nil while it has not
// failed (a cleanly closed stream has none).
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.Err()
}

// Done returns a channel that is closed when the stream has ended: closed
// or failed.
func (s *Stream) Done() <-chan struct{} { return s.done }

// LastDurable returns the highest offset known durable (acknowledged, or at
// or below a resume watermark), or core.NoOffset. Right after a stream is
// resumed by id in a new process it is the server's watermark: the
// application replays its source from the record after it.
func (s *Stream) LastDurable() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.AckFloor()
}

// History returns what this stream knows of its persistent stream: the
// highest offset known durable and the highest ever handed to a
// transport. Given as core.Config.History to a later stream resuming the
// same id in this process, it makes that resume validated as a
// reconnect's is (protocol.md §5.3).
func (s *Stream) History() core.History {
	s.mu.Lock()
	defer s.mu.Unlock()
	return core.History{Durable: s.m.AckFloor(), Attempted: s.m.MaxAttempted()}
}

// LastAssigned returns the offset of the most recently accepted call (after
// a resume in a new process, the watermark until a call is accepted), or
// core.NoOffset.
func (s *Stream) LastAssigned() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.LastAssigned()
}

// Unacked returns every accepted call that is not durable, in offset order,
// grouped as it was ingested. After Close or a failure these are the records
// the application still owns, and every call returns the same list. The
// records are copies the caller may keep (with Options.NoCopy, the slices
// it ingested, each with its length as its capacity).
func (s *Stream) Unacked() []core.Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	batches := s.m.Unacked(nil)
	if s.arena != nil {
		for i := range batches {
			batches[i].Records = cloneRecords(batches[i].Records)
		}
	}
	return batches
}

// cloneRecords copies records out of the arena onto the heap, in one
// allocation for the bytes.
func cloneRecords(records [][]byte) [][]byte {
	n := 0
	for _, r := range records {
		n += len(r)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(records))
	for i, r := range records {
		start := len(buf)
		buf = append(buf, r...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}
