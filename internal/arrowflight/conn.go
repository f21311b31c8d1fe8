package arrowflight

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	"github.com/zbstream/zbstream/internal/arrowflight/flightfsm"
)

// outcome is how a connection ended.
type outcome uint8

const (
	outFailed  outcome = iota // with an error: recover or fail
	outRotated                // the server asked for a new one
	outClosed                 // everything durable, half-closed and drained
)

// conn is one DoPut call.
type conn struct {
	id     uint64
	st     flight.FlightService_DoPutClient
	events chan error         // the reader's end: the call's status or a violation
	rotate chan time.Duration // rotation notices, with their grace
}

// connection opens one DoPut call, sends the schema, waits for the ready
// signal and serves the call until it ends (docs/protocol.md §12.2).
func (s *Stream) connection() (outcome, error) {
	cctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	callCtx, err := s.client.CallContext(cctx, s.table)
	if err != nil {
		return outFailed, err
	}
	s.mu.Lock()
	c := &conn{id: s.m.Connect(), events: make(chan error, 1), rotate: make(chan time.Duration, 1)}
	s.mu.Unlock()

	var timedOut atomic.Bool
	timer := time.AfterFunc(s.opts.openTimeout, func() { timedOut.Store(true); cancel() })
	err = s.open(callCtx, c)
	timer.Stop()
	if err != nil {
		if timedOut.Load() {
			err = &core.ConnectionError{Code: core.CodeDeadlineExceeded, Err: core.ErrOpenTimeout}
		}
		return outFailed, err
	}
	s.obs.connected()
	var wg sync.WaitGroup
	wg.Go(func() { s.read(c) })
	out, err := s.serve(c)
	cancel()
	wg.Wait()
	code := core.CodeCanceled
	if out == outFailed {
		code = grpcio.Classify(err)
	}
	s.obs.disconnected(code)
	return out, err
}

// open starts the call, sends the schema frame and applies the first
// PutResult, which must be the ready signal.
func (s *Stream) open(ctx context.Context, c *conn) error {
	st, err := flight.NewFlightServiceClient(s.client.Conn()).DoPut(ctx)
	if err != nil {
		return err
	}
	c.st = st
	if err := st.Send(s.enc.head); err != nil {
		_, err = st.Recv() // the call's status says why
		return err
	}
	res, err := st.Recv()
	if err != nil {
		return err
	}
	ack, err := flightfsm.ParseAck(res.GetAppMetadata())
	if err != nil {
		s.fail(err)
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.m.Receive(c.id, ack); err != nil {
		s.obs.failed(s.keptFirst, int64(len(s.kept)), err)
		s.broadcast()
		return err
	}
	select {
	case <-s.opened:
	default:
		close(s.opened)
	}
	s.broadcast()
	return nil
}

// read applies the connection's acks until the call ends or the server
// breaks the protocol, and reports which on c.events.
func (s *Stream) read(c *conn) {
	for {
		res, err := c.st.Recv()
		if err != nil {
			c.events <- err
			return
		}
		ack, err := flightfsm.ParseAck(res.GetAppMetadata())
		if err != nil {
			s.fail(err)
			c.events <- err
			return
		}
		if err := s.apply(c, ack); err != nil {
			c.events <- err
			return
		}
	}
}

// apply hands one ack to the machine and releases what it made durable.
func (s *Stream) apply(c *conn, ack flightfsm.Ack) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.m.Receive(c.id, ack)
	if err != nil {
		s.obs.failed(s.keptFirst, int64(len(s.kept)), err)
		s.broadcast()
		return err
	}
	if res.Rows > 0 {
		s.progress++
		s.lastAck = time.Now()
	}
	for range res.Completed {
		s.bytes -= s.kept[0].bytes
		s.kept[0] = nil
		s.kept = s.kept[1:]
		s.keptFirst++
	}
	s.obs.durable(res.From, res.Completed)
	if res.Rotate {
		select {
		case c.rotate <- res.Grace:
		default: // one notice is enough: the connection is being left
		}
	}
	s.broadcast()
	return nil
}

// serve sends what is pending on c and waits for acks until the server
// asks for a rotation and what was in flight is durable (or the grace
// ends), the call ends, no ack advances within the ack timeout, or the
// stream is closing with everything durable and the server has ended the
// half-closed call.
func (s *Stream) serve(c *conn) (outcome, error) {
	var (
		paused  bool
		grace   <-chan time.Time
		broken  bool // a send failed: the reader will have the status
		ackWait = time.NewTimer(time.Hour)
	)
	defer ackWait.Stop()
	for {
		// The change to wait for is taken before sending: a batch ingested
		// after sendPending found nothing to send closes this channel. Taken
		// after, with the other state below, it was the channel that batch's
		// ingest had just put in place, and the batch waited, unsent, for
		// the next change (none, on an idle stream).
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if !paused && !broken {
			if err := s.sendPending(c); err != nil {
				if isProtocol(err) || errors.Is(err, flightfsm.ErrMisuse) {
					s.fail(err)
					return outFailed, err
				}
				broken = true
			}
		}
		s.mu.Lock()
		inflight, idle, closing, last := s.m.InFlight(), s.m.Idle(), s.closing, s.lastAck
		failure := s.m.Err()
		s.mu.Unlock()
		switch {
		case failure != nil:
			return outFailed, failure
		case paused && inflight == 0:
			return outRotated, nil
		case closing && idle && !paused && !broken:
			return s.drain(c)
		}
		var ackTimeout <-chan time.Time
		if inflight > 0 && !paused {
			ackWait.Reset(time.Until(last.Add(s.opts.ackTimeout)))
			ackTimeout = ackWait.C
		}
		select {
		case <-changed:
		case err := <-c.events:
			if paused && grpcio.Classify(err).Retryable() && !isProtocol(err) {
				return outRotated, nil // the server's end of a rotated call
			}
			return outFailed, err
		case g := <-c.rotate:
			if !paused {
				paused = true
				grace = time.After(min(g, s.opts.maxGrace))
			}
		case <-grace:
			return outRotated, nil
		case <-ackTimeout:
			return outFailed, &core.ConnectionError{Code: core.CodeDeadlineExceeded, Err: core.ErrAckTimeout}
		case <-s.ctx.Done():
			return outFailed, s.ctx.Err()
		}
		ackWait.Stop() // Go 1.23 timers: a stopped timer delivers nothing stale
	}
}

// drain half-closes c and waits for the server to end the call: every
// batch is durable already, so whatever its status, the stream is closed.
func (s *Stream) drain(c *conn) (outcome, error) {
	if err := c.st.CloseSend(); err != nil {
		return outClosed, nil
	}
	select {
	case <-c.events:
	case <-s.ctx.Done():
	}
	return outClosed, nil
}

// sendPending writes every pending frame on c, one at a time, stopping
// early when a rotation notice or the call's end is waiting. The notice is
// looked for under mu, which apply holds when it queues one: a batch
// ingested after the notice was applied is never sent on c.
func (s *Stream) sendPending(c *conn) error {
	for len(c.events) == 0 {
		s.mu.Lock()
		if len(c.rotate) != 0 {
			s.mu.Unlock()
			return nil
		}
		s.spans = s.m.Pending(s.spans[:0])
		if len(s.spans) == 0 {
			s.mu.Unlock()
			return nil
		}
		sp := s.spans[0]
		e := s.kept[sp.Batch-s.keptFirst]
		i, err := s.frameFrom(e, sp.From)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("batch %d from row %d: %w", sp.Batch, sp.From, err)
		}
		if s.m.InFlight() == 0 {
			s.lastAck = time.Now() // the ack timer starts with the first frame in flight
		}
		off, err := s.m.Sent(c.id, sp.Batch, sp.From, e.ends[i])
		s.mu.Unlock()
		if err != nil {
			return err
		}
		fd := e.frames[i]
		msg := &flight.FlightData{
			DataHeader:  fd.DataHeader,
			DataBody:    fd.DataBody,
			AppMetadata: []byte(`{"offset_id":` + strconv.FormatInt(off, 10) + `}`),
		}
		if err := c.st.Send(msg); err != nil {
			return err
		}
	}
	return nil
}
