package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zbstream/zbstream/writer"
)

// stateStore is the state file of a routed ingestion as the
// Writer's Store: every table's request id is in it before anything
// is sent (made with the state file, in one write), and a stream id is
// saved in it, atomically and durably (state.save), before the
// Writer sends anything into the stream. So a rerun resumes every table's
// stream, and a run that died between a create and its save creates again
// with the same request id and gets the same stream back, still empty.
type stateStore struct {
	mu   sync.Mutex
	st   *state
	path string
}

// Load returns table's ids; a table the state file does not know is an
// error (the file's tables are all in it).
func (s *stateStore) Load(_ context.Context, table string) (writer.Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.st.Tables[table]
	if ts == nil {
		return writer.Entry{}, false, fmt.Errorf("table %s is not in state file %s", table, s.path)
	}
	return writer.Entry{RequestID: ts.ClientRequestID, StreamID: ts.StreamID}, true, nil
}

// Save records table's ids and rewrites the state file; if that fails,
// the state is left as it was.
func (s *stateStore) Save(_ context.Context, table string, e writer.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.st.Tables[table]
	if ts == nil {
		return fmt.Errorf("table %s is not in state file %s", table, s.path)
	}
	old := *ts
	ts.ClientRequestID, ts.StreamID = e.RequestID, e.StreamID
	if err := s.st.save(s.path); err != nil {
		*ts = old
		return err
	}
	return nil
}

// markDone marks the ingestion done and saves the state file.
func (s *stateStore) markDone() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Done, s.st.Finished = true, time.Now().UTC()
	return s.st.save(s.path)
}
