package server

import (
	"sync"
	"sync/atomic"
)

// ArrowCounts is what the server saw of one Arrow stream (one DoPut
// call), counted in data frames and in rows. Received counts every data
// frame read off the call, whether it was then stored, refused, discarded
// by a fault or left queued when the call ended; Stored, what was
// appended to the store; Acked, what the last acknowledgement sent on the
// call covers (its ack_up_to_offset + 1 frames, its ack_up_to_records
// rows; an ack a fault falsified is not counted). A client that recovers
// by replaying unacknowledged rows only sends, on its later calls, the
// rows not counted in the Acked of the earlier ones: the sum of
// RowsReceived over a table's Arrow streams shows what was sent again.
type ArrowCounts struct {
	FramesReceived, RowsReceived int64
	FramesStored, RowsStored     int64
	FramesAcked, RowsAcked       int64
}

// maxEndedCounts is how many ended calls' counts the server keeps, beside
// the live calls': a bound, so that its memory does not grow with the
// number of calls it ever served.
const maxEndedCounts = 1024

// arrowTally is the counts of one call, updated as it goes: the receiver
// adds what it reads, the handler what it stores and acknowledges.
type arrowTally struct {
	framesRecv, rowsRecv     atomic.Int64
	framesStored, rowsStored atomic.Int64
	framesAcked, rowsAcked   atomic.Int64
}

func (t *arrowTally) counts() ArrowCounts {
	return ArrowCounts{
		FramesReceived: t.framesRecv.Load(), RowsReceived: t.rowsRecv.Load(),
		FramesStored: t.framesStored.Load(), RowsStored: t.rowsStored.Load(),
		FramesAcked: t.framesAcked.Load(), RowsAcked: t.rowsAcked.Load(),
	}
}

// received counts a data frame read off the call. Its rows are read from
// its header without decoding it (a header that does not read counts no
// rows: the frame is refused anyway).
func (t *arrowTally) received(header []byte) {
	t.framesRecv.Add(1)
	if h, err := peekHeader(header); err == nil && h.typ == ipcRecordBatch {
		t.rowsRecv.Add(h.length)
	}
}

// arrowTallies are the counts of the live Arrow calls and of the last
// maxEndedCounts ended ones, by stream id.
type arrowTallies struct {
	mu    sync.Mutex
	byID  map[string]*arrowTally
	ended []string // ids of ended calls, oldest first
}

// add registers the counts of a call whose stream is id.
func (a *arrowTallies) add(id string, t *arrowTally) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID = map[string]*arrowTally{}
	}
	a.byID[id] = t
}

// end marks the call of stream id ended: its counts are kept among the
// last maxEndedCounts ended calls'.
func (a *arrowTallies) end(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = append(a.ended, id)
	if len(a.ended) > maxEndedCounts {
		delete(a.byID, a.ended[0])
		a.ended = a.ended[1:]
	}
}

func (a *arrowTallies) get(id string) (ArrowCounts, bool) {
	a.mu.Lock()
	t, ok := a.byID[id]
	a.mu.Unlock()
	if !ok {
		return ArrowCounts{}, false
	}
	return t.counts(), true
}

// ArrowCounts returns the counts of Arrow stream id: a live call's so
// far, an ended call's final ones. The server keeps them in memory for
// its live calls and its last 1,024 ended ones (a restart forgets them);
// false for any other id.
func (s *Server) ArrowCounts(id string) (ArrowCounts, bool) { return s.arrowCounts.get(id) }
