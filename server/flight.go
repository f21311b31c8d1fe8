package server

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MaxArrowFrameBytes is the largest Arrow frame accepted: a FlightData's
// IPC header and body together, 2 MiB. Clients split a larger batch by
// rows into several frames; a frame over it ends the call with
// INVALID_ARGUMENT.
const MaxArrowFrameBytes = 2 << 20

// RecordTypeArrow is StreamMeta.RecordType of a stream written over Arrow
// Flight DoPut. It is the server's own value, outside the wire's
// RecordType enum (whose values are never negative), and never travels:
// Arrow streams are not opened with a CreateIngestStreamRequest.
const RecordTypeArrow int32 = -1

// arrowQueue bounds the frames received and not yet committed on one
// DoPut call; what they hold is within the server-wide receive budget
// (arrowCall).
const arrowQueue = 4

// flightService is the Arrow Flight service the server registers beside
// Zerobus's, on the same gRPC server: DoPut, the Arrow ingestion of the
// official SDKs; every other Flight method is UNIMPLEMENTED.
type flightService struct {
	flight.BaseFlightServer
	s *Server
}

// DoPut runs one Arrow stream (docs/server.md, "Arrow Flight").
func (v *flightService) DoPut(st flight.FlightService_DoPutServer) error {
	return capStatus(v.s.serveArrow(st))
}

// serveArrow authenticates a DoPut call and authorizes its table as the
// stream opens of the other kinds do (the table comes from the
// x-databricks-zerobus-table-name metadata alone, so it is required even
// in open mode), admits it under the principal's cap, then runs it.
func (s *Server) serveArrow(st flight.FlightService_DoPutServer) error {
	ctx := st.Context()
	p, err := s.opts.Auth.authenticate(ctx)
	if err != nil {
		s.log.Info("call rejected", "kind", "arrow", "err", capStatus(err))
		return err
	}
	table, err := tableHeader(ctx)
	switch {
	case err != nil:
		return err
	case table == "":
		return invalid("missing %s metadata: an Arrow stream names its table there", HeaderTable)
	case !validTableName(table):
		return invalid("%s %q is not catalog.schema.table in valid UTF-8", HeaderTable, clip(table))
	}
	if err := s.opts.Auth.authorizeTable(ctx, p, table, true); err != nil {
		s.log.Info("call rejected", "kind", "arrow", "principal", p.Name, "err", capStatus(err))
		return err
	}
	done, err := s.admit(p)
	if err != nil {
		return err
	}
	defer done()
	c := &arrowCall{s: s, st: st, principal: p, table: table, frames: make(chan arrowFrame, arrowQueue), recvDone: make(chan struct{}), durable: -1}
	c.ctx, c.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go c.receive()
	err = c.run()
	c.cancel()
	// receive returns once this handler has (gRPC ends its Recv then):
	// the frames still queued give their budget back after that.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.drain()
		if c.id != "" {
			s.arrowCounts.end(c.id) // its counts are final now
		}
	}()
	s.log.Info("arrow stream ended", "stream", c.id, "table", table, "frames", c.next, "rows", c.rows, "err", capStatus(err))
	return err
}

// awaitFirst waits for the schema frame, at most FirstMessageTimeout.
func (c *arrowCall) awaitFirst() (*flight.FlightData, error) {
	t := time.NewTimer(c.s.opts.FirstMessageTimeout)
	defer t.Stop()
	select {
	case f := <-c.frames:
		c.release(f.taken) // the schema is kept in the stream's meta, not in the frame
		if f.err != nil {
			if err := recvStatus(f.err); err != nil {
				return nil, err
			}
			return nil, invalid("call ended before its schema frame")
		}
		return f.fd, nil
	case <-t.C:
		return nil, status.Errorf(codes.DeadlineExceeded, "no schema frame within %v", c.s.opts.FirstMessageTimeout)
	case <-c.s.draining:
		return nil, status.Error(codes.Unavailable, "server shutting down")
	case <-c.ctx.Done():
		return nil, c.ended()
	}
}
