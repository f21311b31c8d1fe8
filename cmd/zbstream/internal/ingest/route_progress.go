package ingest

import "sync"

// routedTracker counts the durable records of a routed ingestion:
// those found on the server (calls at or below their table's watermark)
// and those of the calls acknowledged in this run. OnAck reports each
// table's offsets in order, so a table's calls sent and not yet durable
// form a queue.
type routedTracker struct {
	mu      sync.Mutex
	found   int64             // records on the server before this run
	acks    int64             // records acknowledged in this run
	pending map[string][]mark // per table: calls sent, not yet durable (offset, records in the call)
}

// onServer counts n records of a call the server already holds.
func (t *routedTracker) onServer(n int64) {
	t.mu.Lock()
	t.found += n
	t.mu.Unlock()
}

// sending notes call k of table, of n records, before it is sent.
func (t *routedTracker) sending(table string, k, n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = map[string][]mark{}
	}
	t.pending[table] = append(t.pending[table], mark{offset: k, records: n})
}

// acked is the Writer's OnAck: table's calls up to off are durable.
func (t *routedTracker) acked(table string, off int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.pending[table]
	i := 0
	for i < len(q) && q[i].offset <= off {
		t.acks += q[i].records
		i++
	}
	t.pending[table] = q[i:]
}

// durable returns the records known durable.
func (t *routedTracker) durable() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.found + t.acks
}

// onServerRecords returns the records found on the server.
func (t *routedTracker) onServerRecords() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.found
}
