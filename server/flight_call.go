package server

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// arrowCall is one DoPut call: a stream of its own in the Store, written
// from offset 0. Two goroutines share it: the receiver reads frames into
// a bounded queue (so HTTP/2 flow control pushes back on a client that
// sends faster than the store syncs), and the handler checks, appends and
// acknowledges them, several frames per Append when they queued up.
type arrowCall struct {
	s         *Server
	st        flight.FlightService_DoPutServer
	principal Principal
	table     string
	ctx       context.Context
	cancel    context.CancelFunc
	frames    chan arrowFrame

	id   string
	dec  *frameDecoder
	next int64 // the offset_id the next frame must carry
	rows int64 // rows stored on this call
}

// arrowFrame is one Recv's result.
type arrowFrame struct {
	fd  *flight.FlightData
	err error
}

// receive reads frames until the call ends; a Recv error is the last
// frame. It stops when the handler returns (c.ctx ends, and gRPC ends a
// pending Recv with the call).
func (c *arrowCall) receive() {
	defer c.s.wg.Done()
	for {
		fd, err := c.st.Recv()
		select {
		case c.frames <- arrowFrame{fd, err}:
		case <-c.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// run opens the stream from the schema frame, says ready, then commits
// frames until the client half-closes (status OK, everything acknowledged)
// or a frame is refused: the valid frames before it are appended and
// acknowledged first.
func (c *arrowCall) run() error {
	first, err := c.awaitFirst()
	if err != nil {
		return err
	}
	if err := c.open(first); err != nil {
		return err
	}
	defer c.dec.close()
	if err := c.st.Send(&flight.PutResult{AppMetadata: arrowAck(-1, 0)}); err != nil {
		return err
	}
	for {
		batches, rows, end, err := c.collect()
		if len(batches) > 0 {
			if aerr := c.s.store.Append(c.ctx, c.id, batches); aerr != nil {
				return storeStatus(aerr)
			}
			c.rows += rows
			if serr := c.st.Send(&flight.PutResult{AppMetadata: arrowAck(c.next-1, c.rows)}); serr != nil {
				return serr
			}
		}
		if err != nil || end {
			return err
		}
	}
}

// collect waits for a frame, then takes those already queued behind it,
// and returns the valid ones as batches with their rows. end is a clean
// half-close; err is why the call ends (a refused frame, a broken call,
// a shutdown).
func (c *arrowCall) collect() (batches []Batch, rows int64, end bool, err error) {
	var f arrowFrame
	select {
	case f = <-c.frames:
	case <-c.s.draining:
		return nil, 0, false, status.Error(codes.Unavailable, "server shutting down")
	case <-c.ctx.Done():
		return nil, 0, false, status.FromContextError(c.ctx.Err()).Err()
	}
	for {
		if f.err != nil {
			err := recvStatus(f.err)
			return batches, rows, err == nil, err
		}
		b, n, err := c.frame(f.fd)
		if err != nil {
			return batches, rows, false, err
		}
		batches, rows = append(batches, b), rows+n
		select {
		case f = <-c.frames:
		default:
			return batches, rows, false, nil
		}
	}
}

// frame checks one data frame and returns it as the batch to store, one
// record: the frame's encapsulated IPC message.
func (c *arrowCall) frame(fd *flight.FlightData) (Batch, int64, error) {
	if why, bad := decodeError(fd); bad {
		return Batch{}, 0, invalid("%s", why)
	}
	if n := len(fd.DataHeader) + len(fd.DataBody); n > MaxArrowFrameBytes {
		return Batch{}, 0, invalid("frame %d: %d bytes exceed the %d-byte frame limit", c.next, n, MaxArrowFrameBytes)
	}
	off, err := parseOffsetMeta(fd.AppMetadata)
	if err != nil {
		return Batch{}, 0, invalid("frame %d: %v", c.next, err)
	}
	if off != c.next {
		return Batch{}, 0, status.Errorf(codes.OutOfRange, "offset_id %d is not the next expected offset %d", off, c.next)
	}
	rows, err := c.dec.decode(fd.DataHeader, fd.DataBody)
	if err != nil {
		return Batch{}, 0, invalid("frame %d: %v", off, err)
	}
	c.next++
	return Batch{Offset: off, Records: [][]byte{encapsulate(fd.DataHeader, fd.DataBody)}}, rows, nil
}

// errSchemaFrame is wrapped by the refusals of a first frame.
var errSchemaFrame = errors.New("the first frame must be the schema: an IPC schema message in data_header, no body, no app_metadata")
