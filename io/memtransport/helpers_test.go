package memtransport_test

import (
	"context"
	"errors"
	stdio "io"
	"strconv"
	"testing"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

var (
	ephemeral  = streamio.OpenRequest{Kind: core.Ephemeral, RecordType: core.RecordJSON}
	persistent = streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON}
)

func resumeOf(id string) streamio.OpenRequest {
	return streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON, Resume: true, StreamID: id}
}

func createWith(rid string) streamio.OpenRequest {
	return streamio.OpenRequest{Kind: core.Persistent, RecordType: core.RecordJSON, RequestID: rid}
}

func open(t *testing.T, srv *memtransport.Server, req streamio.OpenRequest) streamio.Conn {
	t.Helper()
	c, err := srv.Transport().Open(context.Background(), req)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(c.Abort)
	return c
}

// openStream opens and reads the open response, which must be a create
// or resume answer; it returns the connection and the response.
func openStream(t *testing.T, srv *memtransport.Server, req streamio.OpenRequest) (streamio.Conn, core.Response) {
	t.Helper()
	c := open(t, srv, req)
	r := recv(t, c)
	if want := core.RespCreate; req.Resume {
		if r.Kind != core.RespResume {
			t.Fatalf("open response %+v, want a resume response", r)
		}
	} else if r.Kind != want || !r.HasStreamID || r.StreamID == "" {
		t.Fatalf("open response %+v, want a create response with an id", r)
	}
	return c, r
}

func recv(t *testing.T, c streamio.Conn) core.Response {
	t.Helper()
	r, err := c.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return r
}

func send(t *testing.T, c streamio.Conn, wire int64, recs ...string) {
	t.Helper()
	call := streamio.Call{Wire: wire}
	if len(recs) == 1 {
		call.Record = []byte(recs[0])
	} else {
		for _, r := range recs {
			call.Records = append(call.Records, []byte(r))
		}
	}
	if err := c.Send(call); err != nil {
		t.Fatalf("Send(%d): %v", wire, err)
	}
}

func wantAck(t *testing.T, c streamio.Conn, off int64) {
	t.Helper()
	if r := recv(t, c); r.Kind != core.RespAck || !r.HasOffset || r.Offset != off {
		t.Fatalf("got %+v, want ack %d", r, off)
	}
}

func wantAcks(t *testing.T, c streamio.Conn, offs ...int64) {
	t.Helper()
	for _, o := range offs {
		wantAck(t, c, o)
	}
}

// wantEnd reads the connection's end: code OK means io.EOF.
func wantEnd(t *testing.T, c streamio.Conn, code core.Code) {
	t.Helper()
	r, err := c.Recv()
	if err == nil {
		t.Fatalf("Recv: got %+v, want the end (%s)", r, code)
	}
	wantCode(t, err, code)
}

func wantCode(t *testing.T, err error, code core.Code) {
	t.Helper()
	if code == core.CodeOK {
		if !errors.Is(err, stdio.EOF) {
			t.Fatalf("got %v, want io.EOF", err)
		}
		return
	}
	var ce *core.ConnectionError
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("got %v, want a ConnectionError with %s", err, code)
	}
}

func batchesString(bs []memtransport.Batch) string {
	s := ""
	for _, b := range bs {
		s += "|" + strconv.FormatInt(b.Offset, 10) + ":"
		for i, r := range b.Records {
			if i > 0 {
				s += ","
			}
			s += string(r)
		}
	}
	return s
}

type streamioOpenRequest = streamio.OpenRequest

func streamCall(wire int64) streamio.Call { return streamio.Call{Wire: wire, Record: []byte("x")} }
