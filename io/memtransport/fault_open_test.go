package memtransport_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/io/memtransport"
)

func TestFaultFailOpen(t *testing.T) {
	for _, code := range []core.Code{0, core.CodeUnauthenticated, core.CodeNotFound} {
		srv := memtransport.NewServer(memtransport.Options{})
		h := srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultFailOpen, Code: code, Times: 2})
		want := code
		if want == 0 {
			want = core.CodeUnavailable
		}
		wantEnd(t, open(t, srv, ephemeral), want)
		_, err := srv.Transport().Open(context.Background(), persistent)
		if err != nil {
			t.Fatal(err)
		}
		if h.Hits() != 2 || !h.Spent() {
			t.Fatalf("hits %d spent %v", h.Hits(), h.Spent())
		}
		openStream(t, srv, ephemeral) // spent
		if n := len(srv.Streams()); n != 1 {
			t.Fatalf("%d streams", n)
		}
	}
}

func TestFaultFailOpenAtOpen(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultFailOpen, Code: core.CodeUnauthenticated, AtOpen: true})
	c, err := srv.Transport().Open(context.Background(), ephemeral)
	if c != nil {
		t.Fatal("Open returned a connection with its error")
	}
	wantCode(t, err, core.CodeUnauthenticated)
}

func TestFaultFailOpenMatchesStream(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	_, r1 := openStream(t, srv, persistent)
	_, r2 := openStream(t, srv, persistent)
	h := srv.Inject(memtransport.Match{StreamID: r2.StreamID}, memtransport.Fault{Kind: memtransport.FaultFailOpen})
	openStream(t, srv, persistent)            // a create: no id to match
	openStream(t, srv, resumeOf(r1.StreamID)) // another stream
	select {
	case <-h.Fired():
		t.Fatal("fired on another stream")
	default:
	}
	wantEnd(t, open(t, srv, resumeOf(r2.StreamID)), core.CodeUnavailable)
	<-h.Fired()

	h = srv.Inject(memtransport.Match{Kind: core.Ephemeral}, memtransport.Fault{Kind: memtransport.FaultFailOpen, Times: memtransport.Unlimited})
	openStream(t, srv, persistent)
	for range 3 {
		wantEnd(t, open(t, srv, ephemeral), core.CodeUnavailable)
	}
	h.Remove()
	h.Remove()
	openStream(t, srv, ephemeral)
	if h.Hits() != 3 {
		t.Fatalf("hits %d", h.Hits())
	}
}

func TestFaultHangOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := memtransport.NewServer(memtransport.Options{})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultHangOpen})
		c := open(t, srv, persistent)
		if err := c.Send(streamCall(0)); err != nil { // discarded
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			_, err := c.Recv()
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Recv of an unanswered open returned %v", err)
		default:
		}
		c.Abort()
		wantCode(t, <-done, core.CodeCanceled)
		if len(srv.Streams()) != 0 || srv.Stats().Calls != 0 {
			t.Fatalf("an unanswered open did something: %+v", srv.Stats())
		}
	})
}

func TestFaultLoseOpenResponse(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseOpenResponse})
	wantEnd(t, open(t, srv, createWith("r")), core.CodeUnavailable)
	_, r := openStream(t, srv, createWith("r"))
	if ss := srv.Streams(); len(ss) != 1 || ss[0].ID != r.StreamID {
		t.Fatalf("the retried create made another stream: %+v", ss)
	}
}

func TestFaultHostileOpenResponses(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	c, r := openStream(t, srv, persistent)
	send(t, c, 0, "a")
	send(t, c, 1, "b")
	id := r.StreamID
	for _, tc := range []struct {
		name string
		f    memtransport.Fault
		req  streamioOpenRequest
		want core.Response
	}{
		{"watermark above", memtransport.Fault{Kind: memtransport.FaultResumeWatermark, Watermark: 7},
			resumeOf(id), core.Response{Kind: core.RespResume, Offset: 7, HasOffset: true}},
		{"watermark below", memtransport.Fault{Kind: memtransport.FaultResumeWatermark, Watermark: 0},
			resumeOf(id), core.Response{Kind: core.RespResume, Offset: 0, HasOffset: true}},
		{"watermark max", memtransport.Fault{Kind: memtransport.FaultResumeWatermark, Watermark: math.MaxInt64},
			resumeOf(id), core.Response{Kind: core.RespResume, Offset: math.MaxInt64, HasOffset: true}},
		{"no watermark", memtransport.Fault{Kind: memtransport.FaultResumeWithoutWatermark},
			resumeOf(id), core.Response{Kind: core.RespResume}},
		{"create without id", memtransport.Fault{Kind: memtransport.FaultStreamIDMissing},
			persistent, core.Response{Kind: core.RespCreate}},
		{"resume answered by create", memtransport.Fault{Kind: memtransport.FaultOpenResponseKind},
			resumeOf(id), core.Response{Kind: core.RespCreate, StreamID: id, HasStreamID: true}},
		{"persistent create answered by resume", memtransport.Fault{Kind: memtransport.FaultOpenResponseKind},
			persistent, core.Response{Kind: core.RespResume, Offset: -1, HasOffset: true}},
		{"ephemeral create answered by ack", memtransport.Fault{Kind: memtransport.FaultOpenResponseKind},
			ephemeral, core.Response{Kind: core.RespAck, Offset: -1, HasOffset: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Inject(memtransport.Match{}, tc.f)
			c := open(t, srv, tc.req)
			if got := recv(t, c); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			c.Abort()
		})
	}
	// The stream itself went on from its true watermark.
	c2, rr := openStream(t, srv, resumeOf(id))
	if rr.Offset != 1 {
		t.Fatalf("resume answered %+v", rr)
	}
	send(t, c2, 2, "c")
	wantAck(t, c2, 2)
}

func TestFaultResumeWatermarkIgnoresCreates(t *testing.T) {
	srv := memtransport.NewServer(memtransport.Options{})
	h := srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultResumeWatermark, Watermark: 5})
	_, r := openStream(t, srv, persistent)
	if h.Hits() != 0 {
		t.Fatal("a resume fault acted on a create")
	}
	_, rr := openStream(t, srv, resumeOf(r.StreamID))
	if rr.Offset != 5 {
		t.Fatalf("resume answered %+v", rr)
	}
}
