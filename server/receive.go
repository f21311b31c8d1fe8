package server

import (
	"context"
	"math"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// item is one checked ingest request, or the end of the client's side.
type item struct {
	seq   int
	batch Batch
	buf   *pooledBuf // what batch.Records are sliced from: freed once processed
	dup   bool       // offset at or below what was already accepted: never written
	size  int        // bytes counted toward the queue's and the server's bounds
	taken int64      // bytes taken from the server's budget
	end   bool
	err   error // with end: the status ending the call (nil: clean end)
}

// maxQueuedBytes is small because what a call queues only has to cover
// the store's commit under way (bolt: a group of a few MiB in 10-30 ms),
// and every queued byte is memory the process touches: on the VM the
// benchmarks run on, 64 MiB per call made the bolt engine's heap, and its
// page faults, twice as large, and 4 MiB was faster than 8 or 16 for one
// stream and for four (issue 21).
const (
	maxQueuedItems = 4096
	maxQueuedBytes = 4 << 20
	// recordOverhead is counted per record on top of its payload toward
	// maxQueuedBytes: the slice header that holds it (24 bytes on 64-bit)
	// and some more, so that a batch of millions of empty records cannot
	// hide from the bound.
	recordOverhead = 32
)

// queue passes items from the receiver to the committer. It is bounded
// per connection (maxQueuedItems, maxQueuedBytes), and each item holds its
// size of the server's receive budget (taken by the receiver before the
// request was read), so that a slow store or a spent budget pushes back on
// the client through gRPC flow control.
type queue struct {
	mu     sync.Mutex
	items  []item
	bytes  int
	closed bool
	ready  chan struct{}
	space  chan struct{}
	budget *budget
	who    string // the principal whose budget the items hold
}

func (q *queue) init(b *budget, who string) {
	q.ready = make(chan struct{}, 1)
	q.space = make(chan struct{}, 1)
	q.budget, q.who = b, who
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// push queues it, waiting for room; false if ctx ended or the queue was
// closed first (then what it held of the budget is given back).
func (q *queue) push(ctx context.Context, it item) bool {
	for !it.end {
		q.mu.Lock()
		room := len(q.items) == 0 || (len(q.items) < maxQueuedItems && q.bytes+it.size <= maxQueuedBytes)
		q.mu.Unlock()
		if room {
			break
		}
		select {
		case <-q.space:
		case <-ctx.Done():
			q.release([]item{it})
			return false
		}
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.release([]item{it})
		return false
	}
	q.items = append(q.items, it)
	q.bytes += it.size
	q.mu.Unlock()
	notify(q.ready)
	return true
}

// take hands the queued items to the committer, which gives their budget
// back with release once they are processed.
func (q *queue) take() []item {
	q.mu.Lock()
	items := q.items
	q.items, q.bytes = nil, 0
	q.mu.Unlock()
	notify(q.space)
	return items
}

// release gives back the budget taken by items.
func (q *queue) release(items []item) {
	if q.budget == nil {
		return
	}
	var n int64
	for _, it := range items {
		n += it.taken
	}
	q.budget.release(q.who, n)
}

// close refuses further items and releases what is queued.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	items := q.items
	q.items, q.bytes = nil, 0
	q.mu.Unlock()
	q.release(items)
	notify(q.space)
}

// receive reads the first message for the handler, waits for the open to
// succeed, then reads, checks and queues the client's ingest requests
// until the call ends. It runs in its own goroutine, tracked by Server.wg.
func (c *conn) receive() {
	defer c.s.wg.Done()
	m, taken, err := c.read()
	c.release(taken) // an open request is not queued
	c.first <- firstMsg{m, err}
	if err != nil {
		return
	}
	select {
	case <-c.opened:
	case <-c.ctx.Done():
		return
	}
	last := c.watermark // written by the handler before it closed opened
	n := 0
	for {
		m, taken, err := c.read()
		c.recvN.Add(1)
		if err != nil {
			c.q.push(c.ctx, item{end: true, err: recvStatus(err)})
			return
		}
		end := func(err error) {
			c.release(taken)
			c.q.push(c.ctx, item{end: true, err: err})
		}
		if m.kind == msgMalformed {
			end(invalid("%s", m.malformed))
			return
		}
		if m.kind != msgIngest {
			end(invalid("%s after the stream was opened", m.kind))
			return
		}
		n++
		it, err := c.check(m, &last)
		if err != nil {
			end(err)
			return
		}
		// What the request weighs was taken; what is not queued goes back.
		it.seq, it.taken = n, int64(it.size)
		c.release(taken - it.taken)
		if !c.q.push(c.ctx, it) {
			return
		}
	}
}

// read reads and decodes one message within the receive budget: it takes
// the most a message can be before asking gRPC for one (gRPC lets the
// whole message in once asked), then, for a batch, what slicing its
// records adds before slicing them. It returns the message and the budget
// taken for it, which covers its buffer and records (give back what is
// not kept), or the error that ended the call (then nothing is held).
func (c *conn) read() (*clientMsg, int64, error) {
	s := c.s
	h, ok := s.budget.acquireRead(c.ctx, c.principal.Name, int64(s.readLimit), c.yield)
	if !ok {
		return nil, 0, c.fencedErr()
	}
	c.reading.Store(true)
	raw, err := c.w.recv()
	s.budget.doneReading(h)
	if err != nil {
		c.release(h.n)
		return nil, 0, err
	}
	if raw.tooLarge > 0 {
		return &clientMsg{kind: msgMalformed, malformed: tooLargeMsg(raw.tooLarge, s.opts.MaxMessageBytes)}, h.n, nil
	}
	m := decodeRequest(c.kind, raw.buf.b)
	// What the message holds is its buffer's capacity (a pooled buffer is
	// up to a quarter larger than the message).
	m.buf, m.size = raw.buf, cap(raw.buf.b)
	taken := h.n
	if m.batchParts != nil {
		need := int64(m.size) + int64(m.nrec)*recordOverhead
		if need > taken {
			more, ok := s.budget.acquire(c.ctx, c.principal.Name, need-taken)
			if !ok {
				c.release(taken)
				return nil, 0, c.fencedErr()
			}
			taken += more
		}
		m.fillRecords()
	}
	return m, taken, nil
}

// release gives back n bytes of the receive budget taken by c.
func (c *conn) release(n int64) { c.s.budget.release(c.principal.Name, n) }

// yield asks the call to end politely because others wait for the budget
// its idle receiver holds (budget.preemptOne): before the open, at once;
// after, as a rotation (close signal, then a clean end).
func (c *conn) yield() {
	select {
	case c.yieldC <- struct{}{}:
	default:
	}
}

// check validates one ingest request against the stream and the offset
// last accepted on this connection. A duplicate keeps its records only
// when they will be compared with the stored ones (strict duplicates).
func (c *conn) check(m *clientMsg, last *int64) (item, error) {
	if m.offset == nil {
		return item{}, invalid("ingest request without offset_id")
	}
	off := *m.offset
	switch {
	case off < 0:
		return item{}, invalid("offset_id %d is negative", off)
	case m.recType == ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED:
		return item{}, invalid("ingest request at offset %d carries no record", off)
	case m.recType != c.schema.Type():
		return item{}, invalid("%s record at offset %d on a %s stream", m.recType, off, c.schema.Type())
	case len(m.records) == 0:
		return item{}, invalid("empty batch at offset %d", off)
	}
	for {
		cur := c.maxRecv.Load()
		if off <= cur || c.maxRecv.CompareAndSwap(cur, off) {
			break
		}
	}
	if off <= *last {
		it := item{dup: true, batch: Batch{Offset: off}}
		if c.strictDuplicates() {
			it.batch.Records, it.size, it.buf = m.records, heldSize(m), m.buf
		}
		return it, nil
	}
	if *last == math.MaxInt64 || off != *last+1 {
		return item{}, status.Errorf(codes.OutOfRange, "offset_id %d is not the next expected offset %d", off, *last+1)
	}
	if !c.ackOnly {
		if err := c.schema.CheckCall(m.records); err != nil {
			return item{}, invalid("offset %d: %v", off, err)
		}
	}
	*last = off
	return item{batch: Batch{Offset: off, Records: m.records}, size: heldSize(m), buf: m.buf}, nil
}

// recordsSize is what a request's records count toward the receive bounds.
func recordsSize(recs [][]byte) int {
	size := 0
	for _, r := range recs {
		size += len(r) + recordOverhead
	}
	return size
}

// heldSize is what a queued request holds: its records, and the rest of
// the received buffer they are sliced from (kept alive by them).
func heldSize(m *clientMsg) int {
	return max(recordsSize(m.records), m.size+len(m.records)*recordOverhead)
}

// len reports the number of queued items.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}
