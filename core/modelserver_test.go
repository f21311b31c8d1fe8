package core_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/zbstream/zbstream/core"
)

// modelServer is a deliberately simple in-memory Zerobus server for the
// scenario tests. It keeps a committed log per stream id, answers creates
// and resumes like the real service (NOT_FOUND for an unknown id,
// INVALID_ARGUMENT for a record type mismatch), commits what it receives and
// acks cumulatively. Faults are injected through its exported-looking fields.
//
// Ephemeral streams get a new id per connection (the server side of an
// ephemeral stream lives as long as its connection); every call received is
// also recorded per client in deliveries, by logical offset, so that
// at-least-once delivery can be checked across connections.
type modelServer struct {
	t       testing.TB
	streams map[string]*modelStream
	conns   map[modelKey]*modelConn
	lastID  int
	// deliveries: every call received, as logical offsets, per client, in
	// arrival order (duplicates included): what at-least-once is checked on.
	deliveries map[string][]int64

	// dropAfterCommit: when the server commits the call with this logical
	// offset, the connection breaks before the ack goes out: the lost-ack
	// race (commit, then drop). -1 (the default) disables it.
	dropAfterCommit int64
	// watermarkOverride, when set, replaces the watermark of the next resume
	// response: a lying server.
	watermarkOverride *modelWatermark
	// omitStreamID answers creates without a stream id.
	omitStreamID bool
	// wrongOpenKind answers a create with a resume response and a resume
	// with a create response.
	wrongOpenKind bool
	// failOpens makes the next failOpens open attempts end with
	// failOpenCode (CodeUnavailable when unset) instead of an answer.
	failOpens    int
	failOpenCode core.Code
	// opens counts open attempts answered or refused.
	opens int
}

// modelWatermark is a resume response's last_committed_offset, with presence.
type modelWatermark struct {
	offset  int64
	present bool
}

// modelStream is one durable stream: its record type and committed log,
// indexed by offset (one entry per ingest call, holding its records).
type modelStream struct {
	id     string
	rt     core.RecordType
	log    [][][]byte
	writes map[int64]int // persistent: commit attempts per offset
}

// modelConn is the server side of one connection.
type modelConn struct {
	stream    *modelStream
	kind      core.Kind
	committed int64 // highest wire offset committed on this connection
	acked     int64 // highest wire offset acked on this connection
	dead      bool
}

// modelKey names a connection: core.ConnIDs are per machine and a model
// server may serve several machines, so the key carries the client's name.
type modelKey struct {
	client string
	conn   core.ConnID
}

func newModelServer(t testing.TB) *modelServer {
	return &modelServer{
		t:               t,
		streams:         map[string]*modelStream{},
		conns:           map[modelKey]*modelConn{},
		deliveries:      map[string][]int64{},
		dropAfterCommit: -1,
	}
}

// modelOpenResult is the server's answer to an open: a first message, or an
// error status that ends the connection.
type modelOpenResult struct {
	resp core.Response
	code core.Code // CodeOK: resp is valid
}

// open answers an ActOpen from machine key. rt is the record type the
// client declares in its create or resume request.
func (s *modelServer) open(key modelKey, kind core.Kind, a core.Action, rt core.RecordType) modelOpenResult {
	s.opens++
	if s.failOpens > 0 {
		s.failOpens--
		code := s.failOpenCode
		if code == core.CodeOK {
			code = core.CodeUnavailable
		}
		return modelOpenResult{code: code}
	}
	if a.Resume {
		st, ok := s.streams[a.StreamID]
		if !ok {
			return modelOpenResult{code: core.CodeNotFound}
		}
		if st.rt != rt {
			return modelOpenResult{code: core.CodeInvalidArgument}
		}
		s.conns[key] = &modelConn{stream: st, kind: kind, committed: int64(len(st.log)) - 1, acked: int64(len(st.log)) - 1}
		r := core.Response{Kind: core.RespResume}
		if len(st.log) > 0 {
			r.Offset, r.HasOffset = int64(len(st.log))-1, true
		}
		if w := s.watermarkOverride; w != nil {
			r.Offset, r.HasOffset = w.offset, w.present
			s.watermarkOverride = nil
		}
		if s.wrongOpenKind {
			r = core.Response{Kind: core.RespCreate, StreamID: a.StreamID, HasStreamID: true}
		}
		return modelOpenResult{resp: r}
	}
	s.lastID++
	id := fmt.Sprintf("stream-%d", s.lastID)
	st := &modelStream{id: id, rt: rt, writes: map[int64]int{}}
	s.streams[id] = st
	s.conns[key] = &modelConn{stream: st, kind: kind, committed: -1, acked: -1}
	r := core.Response{Kind: core.RespCreate, StreamID: id, HasStreamID: !s.omitStreamID}
	if s.omitStreamID {
		r.StreamID = ""
	}
	if s.wrongOpenKind {
		r = core.Response{Kind: core.RespResume, Offset: -1}
	}
	return modelOpenResult{resp: r}
}

// receive handles one ingest request. committed says whether the request
// reached the server (so the client's send succeeded); alive is false when
// the connection is (now) broken and the driver must report its end.
func (s *modelServer) receive(key modelKey, a core.Action) (committed, alive bool) {
	c, ok := s.conns[key]
	if !ok {
		s.t.Fatalf("model: send on unknown connection %v", key)
	}
	if c.dead {
		return false, false
	}
	recs := a.Records
	if recs == nil {
		recs = [][]byte{a.Record}
	}
	recs = slices.Clone(recs)
	s.deliveries[key.client] = append(s.deliveries[key.client], a.Offset)
	st := c.stream
	switch c.kind {
	case core.Persistent:
		st.writes[a.Wire]++
		switch {
		case a.Wire == int64(len(st.log)):
			st.log = append(st.log, recs)
		case a.Wire < int64(len(st.log)):
			// Already committed: a duplicate the exactly-once server drops
			// (counted in writes so that tests see it).
		default:
			s.t.Fatalf("model: gap on %s: wire offset %d, log length %d", st.id, a.Wire, len(st.log))
		}
		if a.Wire != c.committed+1 {
			s.t.Fatalf("model: out of order on %s: wire %d after %d", st.id, a.Wire, c.committed)
		}
	case core.Ephemeral:
		if a.Wire != c.committed+1 {
			s.t.Fatalf("model: ephemeral wire offset %d after %d", a.Wire, c.committed)
		}
		st.log = append(st.log, recs)
	}
	c.committed = a.Wire
	if s.dropAfterCommit >= 0 && a.Offset == s.dropAfterCommit {
		s.dropAfterCommit = -1
		c.dead = true
		return true, false
	}
	return true, true
}

// ack returns the cumulative ack for everything committed on the connection
// since the last ack, or false when there is nothing new.
func (s *modelServer) ack(key modelKey) (core.Response, bool) {
	c, ok := s.conns[key]
	if !ok || c.dead || c.committed == c.acked {
		return core.Response{}, false
	}
	c.acked = c.committed
	return core.Response{Kind: core.RespAck, Offset: c.acked, HasOffset: true}, true
}

// kill marks a connection broken.
func (s *modelServer) kill(key modelKey) {
	if c, ok := s.conns[key]; ok {
		c.dead = true
	}
}

// committed returns the committed log of a stream.
func (s *modelServer) committed(id string) [][][]byte {
	st, ok := s.streams[id]
	if !ok {
		s.t.Fatalf("model: no stream %q", id)
	}
	return st.log
}

// writes returns how many times each offset of a persistent stream was
// received: exactly-once means every value is 1.
func (s *modelServer) writes(id string) map[int64]int {
	st, ok := s.streams[id]
	if !ok {
		s.t.Fatalf("model: no stream %q", id)
	}
	return st.writes
}

// seed creates a durable stream directly, with one committed call per
// element of calls, as if another process had written it.
func (s *modelServer) seed(rt core.RecordType, calls ...[]string) string {
	s.lastID++
	st := &modelStream{id: fmt.Sprintf("stream-%d", s.lastID), rt: rt, writes: map[int64]int{}}
	for i, c := range calls {
		recs := make([][]byte, len(c))
		for j, r := range c {
			recs[j] = []byte(r)
		}
		st.log = append(st.log, recs)
		st.writes[int64(i)] = 1
	}
	s.streams[st.id] = st
	return st.id
}
