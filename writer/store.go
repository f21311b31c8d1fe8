package writer

import (
	"context"
	"sync"
)

// Store keeps, for every persistent table of a Writer, the ids of its
// stream, so that the table keeps one stream for life: a Writer resumes
// the stored stream instead of creating another, in this process and in
// the next. Implementations must be safe for concurrent use, and Save
// must be durable when it returns (a file store syncs): a Writer sends
// nothing into a new stream before Save has recorded its id, so a process
// that dies at any point leaves a store from which the next one resumes
// the right stream. FileStore is the crash-safe default for one process;
// MemoryStore keeps ids for the life of the process.
type Store interface {
	// Load returns table's entry, and false when the store has none.
	Load(ctx context.Context, table string) (Entry, bool, error)
	// Save records table's entry, replacing any earlier one, durably.
	Save(ctx context.Context, table string, e Entry) error
}

// Entry is what a Store keeps for one table. RequestID is the idempotency
// key of the table's create (see [zbstream.WithClientRequestID]), saved
// before the create is sent: a process that dies between the create and
// the save of StreamID creates again with the same key and gets the same
// stream back, still empty. StreamID is the stream, once created.
type Entry struct {
	RequestID string `json:"request_id"`
	StreamID  string `json:"stream_id,omitempty"`
}

// MemoryStore is a Store in memory: ids survive a stream's close and
// reopen within the process, not a restart. A Writer uses one when
// Config.Store is nil. The zero value is ready to use.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]Entry
}

// Load returns table's entry, and false when there is none. It never
// blocks long and never fails.
func (s *MemoryStore) Load(_ context.Context, table string) (Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[table]
	return e, ok, nil
}

// Save records table's entry. It never fails.
func (s *MemoryStore) Save(_ context.Context, table string, e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]Entry{}
	}
	s.m[table] = e
	return nil
}
