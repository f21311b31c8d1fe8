package arrowstream_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// act is what the fake server does after it has stored one data frame.
type act struct {
	ack    bool   // send the cumulative ack through this frame
	raw    string // send this app_metadata instead of the ack
	rotate bool   // then send a close-only rotation notice of grace ms
	grace  int
	drop   bool       // then end the call with UNAVAILABLE
	end    bool       // then end the call cleanly
	code   codes.Code // then end the call with this status, if not OK

	hold       <-chan struct{} // wait until it is closed (or the call ends) to go on
	closeInAck bool            // the ack itself carries close_stream_duration_ms grace
	lateAck    bool            // with rotate: the notice goes first, before hold and the ack
}

// fakeServer is a Flight DoPut server that stores the rows of column
// "id" it receives and acks as its script says: by default every frame.
type fakeServer struct {
	flight.BaseFlightServer
	addr string

	// script decides, for frame (connection-local offset) of connection
	// conn (from 0), what to do; nil acks every frame.
	script func(conn, frame int) act
	// byRows, when set, decides instead of script, knowing the ids of the
	// frame's rows too.
	byRows func(conn, frame int, ids []int64) act
	// ready, when set, replaces the ready signal.
	ready string
	// refuse, when set, may end a call at its start with an error.
	refuse func(conn int) error

	mu        sync.Mutex
	conns     int
	received  []int64        // ids in the order they arrived, repeats included
	acked     map[int64]bool // ids acknowledged
	ackedOn   map[int64]int  // the connection that acknowledged each
	resentAck []int64        // ids sent again after they were acknowledged
	frames    int            // data frames received
	perConn   []int          // data frames received on each connection
	maxFrame  int            // the largest data frame, in bytes
	md        []metadata.MD  // each call's metadata
	violation []string       // the client's breaches of the protocol
}

func startServer(t *testing.T, f *fakeServer) *fakeServer {
	t.Helper()
	stop, err := f.listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, v := range stop() {
			t.Errorf("client broke the protocol: %s", v)
		}
	})
	return f
}

// listen serves f on a loopback port; stop ends it and returns the
// client's breaches of the protocol.
func (f *fakeServer) listen() (stop func() []string, err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.addr = lis.Addr().String()
	f.acked = map[int64]bool{}
	f.ackedOn = map[int64]int{}
	srv := grpc.NewServer()
	flight.RegisterFlightServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lis) }()
	return func() []string {
		srv.Stop()
		<-done
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.violation
	}, nil
}

func (f *fakeServer) breach(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.violation = append(f.violation, fmt.Sprintf(format, args...))
}

// first replays the schema frame to flight.NewRecordReader before the
// rest of the call.
type first struct {
	head *flight.FlightData
	st   flight.FlightService_DoPutServer
	last *flight.FlightData
}

func (r *first) Recv() (*flight.FlightData, error) {
	if r.head != nil {
		fd := r.head
		r.head = nil
		return fd, nil
	}
	fd, err := r.st.Recv()
	r.last = fd
	return fd, err
}

// DoPut implements the Zerobus Flight exchange (docs/protocol.md §12).
func (f *fakeServer) DoPut(st flight.FlightService_DoPutServer) error {
	md, _ := metadata.FromIncomingContext(st.Context())
	f.mu.Lock()
	conn := f.conns
	f.conns++
	f.md = append(f.md, md)
	f.perConn = append(f.perConn, 0)
	f.mu.Unlock()
	if f.refuse != nil {
		if err := f.refuse(conn); err != nil {
			return err
		}
	}

	head, err := st.Recv()
	if err != nil {
		return err
	}
	if len(head.DataBody) != 0 || len(head.AppMetadata) != 0 {
		f.breach("schema frame with a body or app_metadata")
	}
	ready := `{"ack_up_to_offset":-1,"ack_up_to_records":0}`
	if f.ready != "" {
		ready = f.ready
	}
	if err := st.Send(&flight.PutResult{AppMetadata: []byte(ready)}); err != nil {
		return err
	}
	src := &first{head: head, st: st}
	r, err := flight.NewRecordReader(src)
	if err != nil {
		f.breach("schema frame: %v", err)
		return status.Error(codes.InvalidArgument, err.Error())
	}
	defer r.Release()
	var rows int64
	var pendingIDs []int64 // received on this call, not acked yet
	for frame := 0; r.Next(); frame++ {
		var meta struct {
			OffsetID *int64 `json:"offset_id"`
		}
		if err := json.Unmarshal(r.LatestAppMetadata(), &meta); err != nil || meta.OffsetID == nil || *meta.OffsetID != int64(frame) {
			f.breach("conn %d frame %d: app_metadata %s", conn, frame, r.LatestAppMetadata())
		}
		size := proto.Size(src.last)
		ids := r.RecordBatch().Column(0).(*array.Int64).Int64Values()
		f.mu.Lock()
		f.frames++
		f.perConn[conn]++
		f.maxFrame = max(f.maxFrame, size)
		for _, id := range ids {
			// A row acknowledged on this connection or an earlier one must
			// not come again; a frame of an older connection read late
			// (sent before the client left it) is no resend.
			if on, ok := f.ackedOn[id]; ok && conn >= on {
				f.resentAck = append(f.resentAck, id)
			}
			f.received = append(f.received, id)
		}
		f.mu.Unlock()
		rows += int64(len(ids))
		pendingIDs = append(pendingIDs, ids...)

		a := act{ack: true}
		switch {
		case f.byRows != nil:
			a = f.byRows(conn, frame, ids)
		case f.script != nil:
			a = f.script(conn, frame)
		}
		if a.rotate && a.lateAck {
			if err := notice(st, a.grace); err != nil {
				return err
			}
		}
		if a.hold != nil {
			select {
			case <-a.hold:
			case <-st.Context().Done():
				return st.Context().Err()
			}
		}
		switch {
		case a.raw != "":
			if err := st.Send(&flight.PutResult{AppMetadata: []byte(a.raw)}); err != nil {
				return err
			}
		case a.ack:
			f.mu.Lock()
			for _, id := range pendingIDs {
				f.acked[id] = true
				if _, ok := f.ackedOn[id]; !ok {
					f.ackedOn[id] = conn
				}
			}
			f.mu.Unlock()
			pendingIDs = pendingIDs[:0]
			ack := fmt.Sprintf(`{"ack_up_to_offset":%d,"ack_up_to_records":%d}`, frame, rows)
			if a.closeInAck {
				ack = fmt.Sprintf(`{"ack_up_to_offset":%d,"ack_up_to_records":%d,"close_stream_duration_ms":%d}`, frame, rows, a.grace)
			}
			if err := st.Send(&flight.PutResult{AppMetadata: []byte(ack)}); err != nil {
				return err
			}
		}
		if a.rotate && !a.lateAck {
			if err := notice(st, a.grace); err != nil {
				return err
			}
		}
		if a.drop {
			return status.Error(codes.Unavailable, "dropped by the test")
		}
		if a.end {
			return nil
		}
		if a.code != codes.OK {
			return status.Error(a.code, "ended by the test")
		}
	}
	if err := r.Err(); err != nil && err != io.EOF {
		if s, ok := status.FromError(err); ok && s.Code() == codes.Canceled {
			return err
		}
		f.breach("conn %d: %v", conn, err)
	}
	return nil
}

// notice sends a close-only rotation notice of grace ms.
func notice(st flight.FlightService_DoPutServer, grace int) error {
	notice := fmt.Sprintf(`{"ack_up_to_offset":-1,"ack_up_to_records":0,"close_stream_duration_ms":%d}`, grace)
	return st.Send(&flight.PutResult{AppMetadata: []byte(notice)})
}

// counts is what the server has seen so far.
type counts struct{ conns, frames, maxFrame int }

func (f *fakeServer) counts() counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return counts{f.conns, f.frames, f.maxFrame}
}

// framesOn returns the data frames received on each connection so far.
func (f *fakeServer) framesOn() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.perConn...)
}

// idsReceived returns how often each id arrived.
func (f *fakeServer) idsReceived() map[int64]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[int64]int{}
	for _, id := range f.received {
		n[id]++
	}
	return n
}

// testSchema is the schema of the tests' batches: an id and a name.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)
