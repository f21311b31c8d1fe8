package propertytests

// The simulation's faulty network, in virtual time: an event queue ordered by
// (instant, sequence number), and connections made of two FIFO channels
// (client to server, server to client) whose messages arrive after a random
// delay, in order, unless a fault cuts the channel (everything in flight on it
// is lost). Nothing here reads a clock or starts a goroutine: the same seed
// gives the same events in the same order.

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/zbstream/zbstream/core"
)

// simEvKind tags a simEvent.
type simEvKind uint8

const (
	simEvApp        simEvKind = iota + 1 // the application's next ingest step
	simEvSrvMsg                          // a client message reaches the server
	simEvCliMsg                          // a server message reaches the client
	simEvCliEnd                          // the client learns that a connection ended
	simEvSync                            // a stream's group commit
	simEvSrvCrash                        // the server process dies
	simEvSrvRestart                      // the server process is back
	simEvCliCrash                        // the client process dies
	simEvDrop                            // the network breaks the current connection
	simEvSignal                          // the server rotates the current connection
	simEvSrvEnd                          // the server ends a connection after a close signal's grace
	simEvLie                             // the hostile server lies once (simConfig.Lie)
)

var simEvNames = [...]string{
	simEvApp: "app", simEvSrvMsg: "srv-msg", simEvCliMsg: "cli-msg", simEvCliEnd: "cli-end",
	simEvSync: "sync", simEvSrvCrash: "srv-crash", simEvSrvRestart: "srv-restart",
	simEvCliCrash: "cli-crash", simEvDrop: "drop", simEvSignal: "signal", simEvSrvEnd: "srv-end",
	simEvLie: "lie",
}

func (k simEvKind) String() string {
	if int(k) < len(simEvNames) && simEvNames[k] != "" {
		return simEvNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// simMsgKind tags a client-to-server message.
type simMsgKind uint8

const (
	simMsgOpen      simMsgKind = iota + 1 // create or resume request
	simMsgIngest                          // one ingest call
	simMsgHalfClose                       // the client half-closed
	simMsgGone                            // the client tore the connection down (or its process died)
)

// simMsg is a client-to-server message: a decoded request.
type simMsg struct {
	kind      simMsgKind
	resume    bool
	streamID  string
	requestID string
	offset    int64 // logical offset (for the checks only: a server sees wire)
	wire      int64
	records   [][]byte
	badToken  bool // the open carries an expired token
}

// simEvent is one scheduled event. Only the fields of its kind are set.
type simEvent struct {
	at   core.Instant
	seq  uint64
	kind simEvKind

	conn   *simConn
	epoch  uint64 // the channel's epoch when sent: stale if the channel was cut since
	msg    simMsg
	resp   core.Response
	code   core.Code
	gen    int        // the client process an application event belongs to
	stream *simStream // simEvSync
	lie    bool       // this server message is the hostile server's lie
}

// simQueue is a min-heap of events by (at, seq): deterministic, FIFO among
// events at the same instant.
type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// simConn is one connection attempt of one client process: the two
// channels, what the client knows of it, and the server's side of it.
type simConn struct {
	id  int // global, for traces
	gen int // the client process that opened it
	cid core.ConnID

	upLast, downLast   core.Instant // FIFO: the arrival time of the last message sent
	upEpoch, downEpoch uint64       // bumped by a cut: what was in flight is lost

	// Client side.
	cliEnded bool // the end was reported to the machine, or the client left it
	aborted  bool // the machine emitted its ActAbort
	// Server-to-client side: nothing more is sent once an end is on its way
	// or the channel is a black hole.
	downClosed bool

	// Server side.
	srv simSrvConn
}

// simNet is the virtual clock, the event queue, the connections, the
// randomness and the trace of one run.
type simNet struct {
	rng   *rand.Rand
	now   core.Instant
	q     simQueue
	seq   uint64
	conns []*simConn
	// byGen indexes the connections of the current client process by ConnID.
	byGen map[core.ConnID]*simConn

	// Delays: every message takes minDelay + [0, jitter); with probability
	// spikeP it takes up to spike more.
	minDelay, jitter, spike time.Duration
	spikeP                  float64

	trace    hash.Hash64
	scratch  []byte
	keepText bool
	text     []string // the last simTraceLines trace lines, when keepText
	lines    int
}

const simTraceLines = 400

func newSimNet(rng *rand.Rand, keepText bool) *simNet {
	return &simNet{
		rng:      rng,
		byGen:    map[core.ConnID]*simConn{},
		minDelay: 200 * time.Microsecond,
		jitter:   3 * time.Millisecond,
		spike:    300 * time.Millisecond,
		spikeP:   0.01,
		trace:    fnv.New64a(),
		keepText: keepText,
	}
}

// tr adds one line to the trace: a tag and integers, hashed (and kept as text
// when asked, for a failure report).
func (n *simNet) tr(tag string, vals ...int64) {
	n.lines++
	b := n.scratch[:0]
	b = binary.LittleEndian.AppendUint64(b, uint64(n.now))
	b = append(b, tag...)
	b = append(b, 0)
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	n.trace.Write(b)
	n.scratch = b
	if n.keepText {
		line := fmt.Sprintf("%20d %s %v", int64(n.now), tag, vals)
		if len(n.text) == simTraceLines {
			copy(n.text, n.text[1:])
			n.text = n.text[:simTraceLines-1]
		}
		n.text = append(n.text, line)
	}
}

func (n *simNet) push(e *simEvent) {
	n.seq++
	e.seq = n.seq
	heap.Push(&n.q, e)
}

func (n *simNet) peek() *simEvent {
	if len(n.q) == 0 {
		return nil
	}
	return n.q[0]
}

func (n *simNet) pop() *simEvent { return heap.Pop(&n.q).(*simEvent) }

// at schedules an event of kind k after d.
func (n *simNet) at(d time.Duration, e *simEvent) {
	e.at = n.now.Add(d)
	n.push(e)
}

// delay draws one message's transit time.
func (n *simNet) delay() time.Duration {
	d := n.minDelay + time.Duration(n.rng.Int64N(int64(n.jitter)))
	if n.rng.Float64() < n.spikeP {
		d += time.Duration(n.rng.Int64N(int64(n.spike)))
	}
	return d
}

// exp draws an exponentially distributed interval with the given mean.
func (n *simNet) exp(mean time.Duration) time.Duration {
	return time.Duration(n.rng.ExpFloat64()*float64(mean)) + time.Microsecond
}

func (n *simNet) chance(p float64) bool { return p > 0 && n.rng.Float64() < p }

// newConn registers connection cid of client process gen.
func (n *simNet) newConn(gen int, cid core.ConnID) *simConn {
	c := &simConn{id: len(n.conns) + 1, gen: gen, cid: cid, upLast: math.MinInt64, downLast: math.MinInt64}
	n.conns = append(n.conns, c)
	n.byGen[cid] = c
	return c
}

// newGen forgets the connection index of the previous client process.
func (n *simNet) newGen() { n.byGen = map[core.ConnID]*simConn{} }

// up sends a client message to the server, in order behind what is in
// flight on the connection.
func (n *simNet) up(c *simConn, m simMsg) {
	at := n.now.Add(n.delay())
	if at < c.upLast {
		at = c.upLast
	}
	c.upLast = at
	n.push(&simEvent{at: at, kind: simEvSrvMsg, conn: c, epoch: c.upEpoch, msg: m})
}

// down sends a server message to the client, in order behind what is in
// flight, and returns its event; nothing is sent (nil) once the channel is
// closed.
func (n *simNet) down(c *simConn, r core.Response) *simEvent {
	if c.downClosed {
		return nil
	}
	at := n.now.Add(n.delay())
	if at < c.downLast {
		at = c.downLast
	}
	c.downLast = at
	e := &simEvent{at: at, kind: simEvCliMsg, conn: c, epoch: c.downEpoch, resp: r}
	n.push(e)
	return e
}

// end tells the client, behind what is in flight, that the connection ended
// with code; it is the last thing the channel carries.
func (n *simNet) end(c *simConn, code core.Code) {
	if c.downClosed {
		return
	}
	c.downClosed = true
	at := n.now.Add(n.delay())
	if at < c.downLast {
		at = c.downLast
	}
	c.downLast = at
	n.push(&simEvent{at: at, kind: simEvCliEnd, conn: c, epoch: c.downEpoch, code: code})
}

// cutUp loses every client message in flight on c.
func (n *simNet) cutUp(c *simConn) { c.upEpoch++ }

// cutDown loses every server message in flight on c.
func (n *simNet) cutDown(c *simConn) { c.downEpoch++ }

// blackhole makes c's server-to-client channel lose everything, for ever:
// the client learns of it only through its own timers.
func (n *simNet) blackhole(c *simConn) {
	c.downEpoch++
	c.downClosed = true
}

// simRetryableCodes are the codes a failed open or a dropped connection
// carries: all retryable (protocol.md §5.5).
var simRetryableCodes = []core.Code{
	core.CodeOK, core.CodeCanceled, core.CodeUnknown, core.CodeDeadlineExceeded,
	core.CodeAlreadyExists, core.CodeResourceExhausted, core.CodeFailedPrecondition,
	core.CodeAborted, core.CodeInternal, core.CodeUnavailable, core.CodeDataLoss,
}

func (n *simNet) retryableCode() core.Code {
	return simRetryableCodes[n.rng.IntN(len(simRetryableCodes))]
}
