package memtransport

import (
	"strconv"
	"sync"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// stream is one server stream: its identity, its log and its writer.
type stream struct {
	id         string
	kind       core.Kind
	recordType core.RecordType
	requestID  string

	mu          sync.Mutex
	owner       *conn   // the only connection that may append; older ones are fenced
	watermark   int64   // highest offset stored (acknowledged in ack-only mode); -1: none
	batches     []Batch // in offset order; empty in ack-only mode
	connections int
}

// create performs a create for c: a new stream, or for a persistent create
// with a request id already seen, that stream again (fencing its writer).
func (s *Server) create(c *conn, req streamio.OpenRequest) (*stream, error) {
	s.mu.Lock()
	st := s.byRequest[req.RequestID]
	if req.Kind != core.Persistent || req.RequestID == "" {
		st = nil
	}
	if st != nil && st.recordType != req.RecordType {
		s.mu.Unlock()
		return nil, connError(core.CodeInvalidArgument, "client_request_id already names a stream of another record type")
	}
	if st == nil {
		s.nextID++
		st = &stream{
			id: "stream-" + strconv.Itoa(s.nextID), kind: req.Kind, recordType: req.RecordType,
			watermark: core.NoOffset,
		}
		if req.Kind == core.Persistent {
			st.requestID = req.RequestID
			if req.RequestID != "" {
				s.byRequest[req.RequestID] = st
			}
		}
		s.streams[st.id] = st
		s.order = append(s.order, st)
	}
	s.mu.Unlock()
	s.stats.creates.Add(1)
	c.claim(st, false)
	return st, nil
}

// resume performs a resume of req.StreamID for c.
func (s *Server) resume(c *conn, req streamio.OpenRequest) (*stream, int64, error) {
	s.mu.Lock()
	st := s.streams[req.StreamID]
	s.mu.Unlock()
	switch {
	case st == nil || st.kind != core.Persistent:
		return nil, 0, connError(core.CodeNotFound, "stream "+strconv.Quote(req.StreamID)+" not found")
	case st.recordType != req.RecordType:
		return nil, 0, connError(core.CodeInvalidArgument,
			"record type "+req.RecordType.String()+" does not match the stream's "+st.recordType.String())
	}
	s.stats.resumes.Add(1)
	return st, c.claim(st, true), nil
}

// claim makes c the writer of st, fencing the older writer, and returns
// the watermark at that moment. A resume tells the client that watermark;
// a create tells it nothing (-1): acks are then capped by what the client
// sends, so that a repeated create starting again at 0 is never
// acknowledged offsets it has not sent yet.
func (c *conn) claim(st *stream, resume bool) int64 {
	st.mu.Lock()
	old := st.owner
	st.owner = c
	st.connections++
	w, told := st.watermark, core.NoOffset
	if resume {
		told = w
	}
	c.st, c.told, c.lastAck, c.maxRecv = st, told, told, told
	st.mu.Unlock()
	if old != nil {
		old.finish(errFenced)
	}
	return w
}
