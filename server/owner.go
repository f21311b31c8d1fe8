package server

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Ownership (protocol.md §6.6): a stream belongs to the principal that
// created it. Another principal's resume or retire is answered NOT_FOUND,
// as for an id that does not exist (errNotFound), and a client_request_id
// names a stream only for the principal and table that created it
// (requestKey): ids leak nothing across principals.

// owns reports whether p may resume or retire the stream meta describes.
func owns(meta StreamMeta, p Principal) bool { return meta.Principal == p.Name }

// requestKey is the key under which a Store finds a persistent stream by
// its client_request_id: the principal, the table and the id, each length
// prefixed so that no two triples share a key.
func requestKey(principal, table, requestID string) string {
	b := make([]byte, 0, 3*binary.MaxVarintLen64+len(principal)+len(table)+len(requestID))
	for _, s := range [...]string{principal, table, requestID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return string(b)
}

// streamEntry serializes the writers of one stream: owner is the only
// connection allowed to append (fencing), appendMu makes an ownership
// change wait for an Append in progress.
type streamEntry struct {
	appendMu sync.Mutex
	owner    atomic.Pointer[conn]
}

// claim makes c (nil: nobody, for a retire) the only writer of stream id
// and fences the previous writer with cause.
func (s *Server) claim(id string, c *conn, cause error) *streamEntry {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	e := s.streams[id]
	if e == nil {
		e = &streamEntry{}
		s.streams[id] = e
	}
	if old := e.owner.Load(); old != nil && old != c {
		old.fence(cause) // before the swap: a fenced writer sees its cause
	}
	e.owner.Store(c)
	return e
}

// release forgets c as the writer of its stream, if it still is.
func (s *Server) release(id string, c *conn) {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if e := s.streams[id]; e != nil && e.owner.Load() == c {
		delete(s.streams, id)
	}
}
