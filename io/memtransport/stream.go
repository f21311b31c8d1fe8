package memtransport

import (
	"slices"
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

// errFenced ends a connection whose stream was taken by a newer one.
var errFenced = connError(core.CodeAborted, "superseded by a newer connection to the stream")

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

// Batch is one stored ingest call: its offset and its records. The
// records are the server's copies; do not modify them.
type Batch struct {
	Offset  int64
	Records [][]byte
}

// StreamInfo describes one server stream.
type StreamInfo struct {
	ID         string
	Kind       core.Kind
	RecordType core.RecordType
	// RequestID is the client request id of a persistent create ("" if
	// none).
	RequestID string
	// Watermark is the highest offset stored (in ack-only mode: the
	// highest acknowledged), core.NoOffset when none.
	Watermark int64
	// Connections counts the connections that opened the stream.
	Connections int
}

func (st *stream) info() StreamInfo {
	st.mu.Lock()
	defer st.mu.Unlock()
	return StreamInfo{ID: st.id, Kind: st.kind, RecordType: st.recordType, RequestID: st.requestID,
		Watermark: st.watermark, Connections: st.connections}
}

func (s *Server) lookup(id string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

// Streams lists the server's streams in creation order.
func (s *Server) Streams() []StreamInfo {
	s.mu.Lock()
	all := slices.Clone(s.order)
	s.mu.Unlock()
	out := make([]StreamInfo, len(all))
	for i, st := range all {
		out[i] = st.info()
	}
	return out
}

// Stream describes the stream id; ok is false when there is none.
func (s *Server) Stream(id string) (info StreamInfo, ok bool) {
	st := s.lookup(id)
	if st == nil {
		return StreamInfo{}, false
	}
	return st.info(), true
}

// Watermark returns the highest offset stored in stream id (in ack-only
// mode: acknowledged), core.NoOffset when none; ok is false when there is
// no such stream.
func (s *Server) Watermark(id string) (w int64, ok bool) {
	info, ok := s.Stream(id)
	return info.Watermark, ok
}

// Batches returns the calls stored in stream id, in offset order, one
// Batch per call (nil in ack-only mode or for an unknown stream).
func (s *Server) Batches(id string) []Batch {
	st := s.lookup(id)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.batches)
}

// Records returns the records stored in stream id, in offset order,
// batches flattened.
func (s *Server) Records(id string) [][]byte {
	var out [][]byte
	for _, b := range s.Batches(id) {
		out = append(out, b.Records...)
	}
	return out
}
