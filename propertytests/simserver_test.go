package propertytests

// The simulation's model server: a durable log per stream with group commit,
// idempotent persistent creates, resumes that report the committed
// watermark, exactly-next offsets, cumulative acks, and the faults a real
// server has (failed opens, lost open responses, coalesced and repeated acks,
// rotations, crashes that lose what was never synced). It is driven by the
// simulation's event loop and never reads a clock.

import (
	"fmt"
	"slices"
	"time"

	"github.com/zbstream/zbstream/core"
)

// simStream is one server stream. A persistent stream lives for the whole
// run; an ephemeral one lives as long as its connection.
type simStream struct {
	id  string
	eph *simConn // ephemeral: the one connection it belongs to

	log [][][]byte // durable (synced) calls, by offset (wire offset for ephemeral)
	buf [][][]byte // received, not yet synced: offsets len(log)..

	syncing bool // a group commit is scheduled
}

func (st *simStream) durable() int64  { return int64(len(st.log)) - 1 }
func (st *simStream) received() int64 { return int64(len(st.log)+len(st.buf)) - 1 }

// at returns the call stored at offset o (durable or buffered).
func (st *simStream) at(o int64) [][]byte {
	if o < int64(len(st.log)) {
		return st.log[o]
	}
	return st.buf[o-int64(len(st.log))]
}

// simSrvConn is the server's side of one connection.
type simSrvConn struct {
	alive  bool
	epoch  int // the server incarnation that accepted it
	stream *simStream
	// high: highest offset received on this connection (the resume
	// watermark at first); lastAck: the last ack sent on it. Acks are
	// cumulative and never above high: a connection is never acked for
	// what it did not send.
	high, lastAck int64
}

// simServerBug is a deliberate server defect, to prove the simulation catches
// a server that breaks its contract.
type simServerBug uint8

// simBugLoseSynced: a crash also loses the last synced call, which was
// acknowledged. The zero simServerBug is a correct server.
const simBugLoseSynced simServerBug = 1

// simServer is the model server.
type simServer struct {
	net  *simNet
	kind core.Kind
	bug  simServerBug

	down    bool
	epoch   int
	noFence bool

	streams   []*simStream // persistent streams, in creation order
	byID      map[string]*simStream
	byRequest map[string]*simStream
	creates   int
	live      []*simConn // connections alive on the server (compacted lazily)
	nextEph   int

	// Fault probabilities.
	openFailP, openLossP, ackLossP, ackRepeatP, endLossP float64
	groupCommit                                          time.Duration

	// onLand reports an ephemeral call that became durable on connection c
	// under wire offset w.
	onLand func(c *simConn, w int64, call [][]byte)
	// lie, when set, is asked at every resume on c whether to answer with
	// watermark w instead of the truth.
	lie func(c *simConn) (w int64, ok bool)

	err error // the first contract violation the server saw from the client

	stats struct {
		failedOpens, lostOpens, lostAcks, repeatedAcks, dupWrites, fenced int
	}
}

func newSimServer(n *simNet, kind core.Kind, bug simServerBug) *simServer {
	return &simServer{
		net: n, kind: kind, bug: bug,
		byID: map[string]*simStream{}, byRequest: map[string]*simStream{},
		groupCommit: 5 * time.Millisecond,
	}
}

func (s *simServer) violation(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("model server: "+format, args...)
	}
}

// onMsg handles one client message that reached the server.
func (s *simServer) onMsg(c *simConn, m simMsg) {
	switch m.kind {
	case simMsgOpen:
		s.open(c, m)
	case simMsgIngest:
		if !s.serving(c) {
			s.net.tr("srv-discard", int64(c.id), m.wire)
			return
		}
		s.ingest(c, m)
	case simMsgHalfClose:
		if !s.serving(c) {
			return
		}
		// The client half-closes only once everything is durable: end the
		// connection cleanly (or, rarely, never: the client's close timeout
		// must end it).
		s.detach(c)
		if s.net.chance(s.endLossP) {
			s.net.tr("srv-end-lost", int64(c.id))
			s.net.blackhole(c)
			return
		}
		s.net.end(c, core.CodeOK)
	case simMsgGone:
		if c.srv.alive {
			s.detach(c)
		}
	}
}

// serving reports whether the server is processing c.
func (s *simServer) serving(c *simConn) bool {
	return !s.down && c.srv.alive && c.srv.epoch == s.epoch
}

// detach ends the server's side of c. An ephemeral stream dies with its
// connection, and what it never synced is lost.
func (s *simServer) detach(c *simConn) {
	c.srv.alive = false
	if st := c.srv.stream; st != nil && st.eph == c {
		st.buf = nil
	}
}

func (s *simServer) open(c *simConn, m simMsg) {
	if s.down {
		s.net.tr("srv-refused", int64(c.id))
		s.net.end(c, core.CodeUnavailable)
		return
	}
	if m.badToken {
		s.net.tr("srv-unauthenticated", int64(c.id))
		s.net.end(c, core.CodeUnauthenticated)
		return
	}
	if s.net.chance(s.openFailP) {
		s.stats.failedOpens++
		code := s.net.retryableCode()
		s.net.tr("srv-open-fail", int64(c.id), int64(code))
		s.net.end(c, code)
		return
	}
	c.srv = simSrvConn{alive: true, epoch: s.epoch, high: core.NoOffset, lastAck: core.NoOffset}
	s.live = append(s.live, c)
	var r core.Response
	lied := false
	switch {
	case s.kind == core.Ephemeral:
		s.nextEph++
		st := &simStream{id: fmt.Sprintf("eph-%d", s.nextEph), eph: c}
		c.srv.stream = st
		r = core.Response{Kind: core.RespCreate, StreamID: st.id, HasStreamID: true}
	case m.resume:
		st, ok := s.byID[m.streamID]
		if !ok {
			s.violation("resume of unknown stream %q", m.streamID)
			c.srv.alive = false
			s.net.end(c, core.CodeNotFound)
			return
		}
		s.attach(c, st)
		w := st.durable()
		if s.lie != nil {
			if lw, ok := s.lie(c); ok {
				w, lied = lw, true
				s.net.tr("srv-lie-watermark", int64(c.id), w)
			}
		}
		c.srv.high, c.srv.lastAck = w, w
		r = core.Response{Kind: core.RespResume}
		if w >= 0 {
			r.Offset, r.HasOffset = w, true
		}
	default:
		if m.requestID == "" {
			s.violation("persistent create without a client_request_id")
		}
		st, ok := s.byRequest[m.requestID]
		if !ok {
			s.creates++
			st = &simStream{id: fmt.Sprintf("stream-%d", s.creates)}
			s.streams = append(s.streams, st)
			s.byID[st.id] = st
			s.byRequest[m.requestID] = st
		}
		// A create retried after its response was lost gets the same stream
		// (protocol.md §6.4). It may be a late copy from a client long gone,
		// arriving after the stream got data: it fences nothing.
		c.srv.stream = st
		r = core.Response{Kind: core.RespCreate, StreamID: st.id, HasStreamID: true}
	}
	if s.net.chance(s.openLossP) {
		// The response never arrives, nor anything after it: only the
		// client's open timeout ends this attempt.
		s.stats.lostOpens++
		s.net.tr("srv-open-lost", int64(c.id))
		s.net.blackhole(c)
		return
	}
	s.net.tr("srv-open", int64(c.id), r.Offset, b2i(r.HasOffset))
	if e := s.net.down(c, r); e != nil {
		e.lie = lied
	}
}

// attach makes c the only connection of persistent stream st: the group
// commit runs first (a resume reports everything ever received), and every
// other connection of the stream is fenced (what it still sends is
// discarded), so nothing sent before the resume can become durable after it.
// A server with noFence lets older connections write on; it is only used
// with a single client process, since a zombie of a previous process could
// then commit offsets above the watermark the new process knows.
func (s *simServer) attach(c *simConn, st *simStream) {
	c.srv.stream = st
	s.sync(st)
	if s.noFence {
		return
	}
	for _, o := range s.live {
		if o != c && o.srv.alive && o.srv.stream == st {
			s.stats.fenced++
			s.net.tr("srv-fence", int64(o.id))
			o.srv.alive = false
			s.net.end(o, core.CodeAborted)
		}
	}
}

func (s *simServer) ingest(c *simConn, m simMsg) {
	st := c.srv.stream
	o := m.wire
	if s.kind == core.Persistent && m.wire != m.offset {
		s.violation("persistent wire offset %d for offset %d", m.wire, m.offset)
	}
	if o != c.srv.high+1 {
		// The network keeps each connection in order and the client sends
		// densely: a hole on one connection is the client's bug.
		s.violation("%s: offset %d on connection %d after %d", st.id, o, c.id, c.srv.high)
	}
	recv := st.received()
	switch {
	case o > recv+1:
		s.violation("%s: gap: offset %d, next expected %d", st.id, o, recv+1)
		s.net.tr("srv-gap", int64(c.id), o, recv)
		s.detach(c)
		s.net.end(c, core.CodeOutOfRange)
		return
	case o == recv+1:
		st.buf = append(st.buf, m.records)
		s.net.tr("srv-write", int64(c.id), o)
		if !st.syncing {
			st.syncing = true
			s.net.at(time.Duration(s.net.rng.Int64N(int64(s.groupCommit)))+time.Microsecond,
				&simEvent{kind: simEvSync, stream: st})
		}
	default:
		// At or below what was received: the same offset must carry the
		// same payload; acknowledged again, never written twice.
		s.stats.dupWrites++
		if !slices.EqualFunc(st.at(o), m.records, func(a, b []byte) bool { return string(a) == string(b) }) {
			s.violation("%s: offset %d sent again with a different payload", st.id, o)
		}
		s.net.tr("srv-dup", int64(c.id), o)
	}
	c.srv.high = max(c.srv.high, o)
	s.ack(c, o <= st.durable())
}

// ack sends c its cumulative ack if it advanced (or, when again is set, the
// current one once more: a duplicate the client must ignore).
func (s *simServer) ack(c *simConn, again bool) {
	if !s.serving(c) {
		return
	}
	a := min(c.srv.stream.durable(), c.srv.high)
	if a < c.srv.lastAck || (a == c.srv.lastAck && !again) || a < 0 {
		return
	}
	c.srv.lastAck = a
	if s.net.chance(s.ackLossP) {
		// Coalesced: a later cumulative ack (or a resume) covers it.
		s.stats.lostAcks++
		s.net.tr("srv-ack-lost", int64(c.id), a)
		return
	}
	r := core.Response{Kind: core.RespAck, Offset: a, HasOffset: true}
	s.net.tr("srv-ack", int64(c.id), a)
	s.net.down(c, r)
	if s.net.chance(s.ackRepeatP) {
		s.stats.repeatedAcks++
		s.net.down(c, r)
	}
}

// sync is the group commit of st: what was received becomes durable and is
// acknowledged.
func (s *simServer) sync(st *simStream) {
	st.syncing = false
	if len(st.buf) == 0 || s.down {
		return
	}
	if st.eph != nil && !st.eph.srv.alive {
		st.buf = nil
		return
	}
	first := int64(len(st.log))
	st.log = append(st.log, st.buf...)
	st.buf = st.buf[:0:0]
	s.net.tr("srv-sync", first, st.durable())
	if st.eph != nil {
		for w := first; w < int64(len(st.log)); w++ {
			s.onLand(st.eph, w, st.log[w])
		}
		s.ack(st.eph, false)
		return
	}
	s.live = slices.DeleteFunc(s.live, func(c *simConn) bool { return !c.srv.alive })
	for _, c := range s.live {
		if c.srv.stream == st {
			s.ack(c, false)
		}
	}
}

// crash kills the server process: every connection ends, and what was never
// synced is lost (and, with simBugLoseSynced, the last synced call too).
func (s *simServer) crash() {
	s.down = true
	s.epoch++
	for _, st := range s.streams {
		st.buf = nil
		if s.bug == simBugLoseSynced && len(st.log) > 0 {
			st.log = st.log[:len(st.log)-1]
		}
	}
	for _, c := range s.live {
		if !c.srv.alive {
			continue
		}
		s.detach(c)
		s.net.cutDown(c)
		s.net.end(c, core.CodeUnavailable)
	}
	s.live = s.live[:0]
}

// closeSignal rotates c: a close signal with a grace, then the end of the
// connection when the grace is over.
func (s *simServer) closeSignal(c *simConn, grace time.Duration, hasGrace bool) {
	r := core.Response{Kind: core.RespCloseSignal, Duration: grace, HasDuration: hasGrace}
	s.net.tr("srv-signal", int64(c.id), int64(grace), b2i(hasGrace))
	s.net.down(c, r)
	s.net.at(grace+s.net.delay(), &simEvent{kind: simEvSrvEnd, conn: c})
}

// endConn ends c from the server's side (the grace of a rotation is over).
func (s *simServer) endConn(c *simConn) {
	if !s.serving(c) {
		return
	}
	s.detach(c)
	s.net.tr("srv-end", int64(c.id))
	s.net.end(c, core.CodeOK)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
