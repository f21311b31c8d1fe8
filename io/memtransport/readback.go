package memtransport

import (
	"slices"

	"github.com/zbstream/zbstream/core"
)

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
