package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// arrowCall is one DoPut call: a stream of its own in the Store, written
// from offset 0. Two goroutines share it: the receiver reads frames into
// a bounded queue (so HTTP/2 flow control pushes back on a client that
// sends faster than the store syncs), and the handler checks, appends and
// acknowledges them, several frames per Append when they queued up.
//
// Every frame is read within the server-wide receive budget, as the
// other streams' requests are (docs/server.md, "Memory"): the receiver
// takes the most a message can be before each Recv, keeps the frame's
// size once it arrived, and the frame holds it until it is appended and
// acknowledged (or refused, or left behind when the call ends).
type arrowCall struct {
	s         *Server
	st        flight.FlightService_DoPutServer
	principal Principal
	table     string
	ctx       context.Context
	cancel    context.CancelFunc
	frames    chan arrowFrame
	recvDone  chan struct{} // closed when receive returns
	yielded   atomic.Bool   // the budget asked the call to end (yield)

	id      string
	dec     *frameDecoder
	next    int64 // the offset_id the next frame must carry
	rows    int64 // rows stored on this call
	durable int64 // the offset of the last frame stored (-1: none)
	tally   arrowTally

	// Faults (flight_fault.go): seq is the data frames processed (the
	// fault point); endTimer, once a close signal was sent, ends the call.
	seq      int
	endTimer *time.Timer
	stored   []Batch // reused by store
}

// arrowFrame is one Recv's result, with the bytes of the receive budget
// it holds.
type arrowFrame struct {
	fd    *flight.FlightData
	err   error
	taken int64
}

// receive reads frames until the call ends; a Recv error is the last
// frame. It stops when the handler returns (c.ctx ends, and gRPC ends a
// pending Recv with the call).
func (c *arrowCall) receive() {
	defer c.s.wg.Done()
	defer close(c.recvDone)
	for schema := true; ; schema = false {
		h, ok := c.s.budget.acquireRead(c.ctx, c.principal.Name, int64(c.s.readLimit), c.yield)
		if !ok {
			return // the call ended while the budget was spent
		}
		fd, err := c.st.Recv()
		c.s.budget.doneReading(h)
		if err == nil && !schema {
			c.tally.received(fd.DataHeader)
		}
		taken := h.n
		if keep := int64(0); err == nil {
			keep = min(taken, int64(proto.Size(fd)))
			c.release(taken - keep)
			taken = keep
		} else {
			c.release(taken)
			taken = 0
		}
		select {
		case c.frames <- arrowFrame{fd, err, taken}:
		case <-c.ctx.Done():
			c.release(taken)
			return
		}
		if err != nil {
			return
		}
	}
}

// release gives back n bytes of the receive budget.
func (c *arrowCall) release(n int64) { c.s.budget.release(c.principal.Name, n) }

// yield is how the budget asks the call to end because others wait for
// what its idle receiver holds: the call ends with UNAVAILABLE, which a
// client retries (it replays what was not acknowledged).
func (c *arrowCall) yield() {
	c.yielded.Store(true)
	c.cancel()
}

// ended is the status of a call whose context ended: the budget's
// request to yield, or the client's end.
func (c *arrowCall) ended() error {
	if c.yielded.Load() {
		return status.Error(codes.Unavailable, "server busy: the call yielded its receive budget to others waiting; reconnect")
	}
	return status.FromContextError(c.ctx.Err()).Err()
}

// drain gives back the budget of the frames still queued once receive has
// returned (nothing is queued after that).
func (c *arrowCall) drain() {
	<-c.recvDone
	for {
		select {
		case f := <-c.frames:
			c.release(f.taken)
		default:
			return
		}
	}
}

// run opens the stream from the schema frame, says ready, then commits
// frames until the client half-closes (status OK, everything acknowledged),
// a frame is refused (the valid frames before it are appended and
// acknowledged first), or an injected fault ends the call.
func (c *arrowCall) run() error {
	first, err := c.awaitFirst()
	if err != nil {
		return err
	}
	if err := c.open(first); err != nil {
		return err
	}
	defer c.dec.close()
	defer c.stopEnd()
	if err := c.st.Send(&flight.PutResult{AppMetadata: arrowAck(-1, 0)}); err != nil {
		return err
	}
	if done, err := c.commit(nil, true); done || err != nil {
		return err
	}
	for {
		frames, held, end, err := c.collect()
		done, cerr := c.commit(frames, false)
		c.release(held)
		switch {
		case done || cerr != nil:
			return cerr
		case err != nil || end:
			return err
		}
	}
}

// arrowBatch is a checked data frame: the batch to store (one record, the
// frame's encapsulated IPC message) and its rows.
type arrowBatch struct {
	batch Batch
	rows  int64
}

// collect waits for a frame, then takes those already queued behind it,
// and returns the valid ones, and the budget the frames taken hold (give
// it back once they are stored). end is a clean half-close, or the end of
// a rotation's grace (status OK); err is why the call ends (a refused
// frame, a broken call, a shutdown).
func (c *arrowCall) collect() (frames []arrowBatch, held int64, end bool, err error) {
	var f arrowFrame
	select {
	case f = <-c.frames:
	case <-c.endC():
		// The grace of a close signal ended: what is queued is still
		// committed, then the call ends.
		end = true
		select {
		case f = <-c.frames:
		default:
			return nil, 0, true, nil
		}
	case <-c.s.draining:
		return nil, 0, false, status.Error(codes.Unavailable, "server shutting down")
	case <-c.ctx.Done():
		return nil, 0, false, c.ended()
	}
	for {
		held += f.taken
		if f.err != nil {
			err := recvStatus(f.err)
			return frames, held, err == nil, err
		}
		b, err := c.frame(f.fd)
		if err != nil {
			return frames, held, false, err
		}
		frames = append(frames, b)
		select {
		case f = <-c.frames:
		default:
			return frames, held, end, nil
		}
	}
}

// frame checks one data frame and returns it as the batch to store, one
// record: the frame's encapsulated IPC message.
func (c *arrowCall) frame(fd *flight.FlightData) (arrowBatch, error) {
	if why, bad := decodeError(fd); bad {
		return arrowBatch{}, invalid("%s", why)
	}
	if n := len(fd.DataHeader) + len(fd.DataBody); n > MaxArrowFrameBytes {
		return arrowBatch{}, invalid("frame %d: %d bytes exceed the %d-byte frame limit", c.next, n, MaxArrowFrameBytes)
	}
	off, err := parseOffsetMeta(fd.AppMetadata)
	if err != nil {
		return arrowBatch{}, invalid("frame %d: %v", c.next, err)
	}
	if off != c.next {
		return arrowBatch{}, status.Errorf(codes.OutOfRange, "offset_id %d is not the next expected offset %d", off, c.next)
	}
	rows, err := c.dec.decode(fd.DataHeader, fd.DataBody)
	if err != nil {
		return arrowBatch{}, invalid("frame %d: %v", off, err)
	}
	c.next++
	return arrowBatch{Batch{Offset: off, Records: [][]byte{encapsulate(fd.DataHeader, fd.DataBody)}}, rows}, nil
}

// errSchemaFrame is wrapped by the refusals of a first frame.
var errSchemaFrame = errors.New("the first frame must be the schema: an IPC schema message in data_header, no body, no app_metadata")
