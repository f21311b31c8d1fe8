package io_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// lateTransport is a transport whose connections' Send waits at a gate of
// its own and reads the call only once the gate opens, whatever became of
// the connection meanwhile: a transport that is slow to notice an abort, as
// any may be for a moment. What Send read arrives on read.
type lateTransport struct {
	conns chan *lateConn
}

func (t *lateTransport) Open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &lateConn{ctx: ctx, cancel: cancel, gate: make(chan struct{}), dropped: make(chan struct{}),
		resp: make(chan core.Response, 16), read: make(chan string, 16)}
	t.conns <- c
	return c, nil
}

func (t *lateTransport) InvalidateCredentials() {}

type lateConn struct {
	ctx     context.Context
	cancel  context.CancelFunc
	gate    chan struct{}
	dropped chan struct{} // closed: the server drops the connection
	resp    chan core.Response
	read    chan string
}

func (c *lateConn) Send(call streamio.Call) error {
	<-c.gate
	c.read <- string(call.Record)
	return nil
}

func (c *lateConn) Recv() (core.Response, error) {
	select {
	case r := <-c.resp:
		return r, nil
	case <-c.dropped:
		return core.Response{}, &core.ConnectionError{Code: core.CodeUnavailable, Err: context.Canceled}
	case <-c.ctx.Done():
		return core.Response{}, &core.ConnectionError{Code: core.CodeCanceled, Err: c.ctx.Err()}
	}
}

func (c *lateConn) CloseSend() error { c.cancel(); return nil }
func (c *lateConn) Abort()           { c.cancel() }

// TestStraySenderKeepsItsRecords: the memory of a durable record is not
// reused while the sender of a connection the stream has left may still be
// reading it. Here the first connection's Send of offset 0 is stuck while
// the stream reconnects, learns from the resume that offset 0 is durable,
// and accepts offset 1 from the same caller buffer: when the stuck Send
// finally reads its call, it must still find offset 0's record.
func TestStraySenderKeepsItsRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &lateTransport{conns: make(chan *lateConn, 4)}
		type opened struct {
			s   *streamio.Stream
			err error
		}
		ch := async(func() opened {
			s, err := streamio.Open(context.Background(), tr, config(core.Persistent), streamio.Options{})
			return opened{s, err}
		})
		first := <-tr.conns
		first.resp <- core.Response{Kind: core.RespCreate, StreamID: "s-1", HasStreamID: true}
		o := <-ch
		if o.err != nil {
			t.Fatal(o.err)
		}
		s := o.s
		buf := []byte(`{"r":"first"}`)
		if _, err := s.IngestRecord(context.Background(), buf); err != nil {
			t.Fatal(err)
		}
		copy(buf, `{"r":"again"}`) // the caller reuses its buffer at once
		synctest.Wait()            // the sender waits in Send of offset 0
		close(first.dropped)
		second := <-tr.conns
		second.resp <- core.Response{Kind: core.RespResume, Offset: 0, HasOffset: true}
		close(second.gate)
		synctest.Wait()
		if d := s.LastDurable(); d != 0 {
			t.Fatalf("after a resume at watermark 0: LastDurable %d", d)
		}
		if off, err := s.IngestRecord(context.Background(), buf); err != nil || off != 1 {
			t.Fatalf("second ingest: offset %d, %v; want 1", off, err)
		}
		if got := <-second.read; got != `{"r":"again"}` {
			t.Errorf("the second connection sent %s, want offset 1's record", got)
		}
		close(first.gate) // the stuck Send reads its call only now
		if got := <-first.read; got != `{"r":"first"}` {
			t.Errorf("the stray sender read %s: offset 0's memory was reused under it", got)
		}
		second.resp <- ackOf(1)
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestUnackedAreCopies: after a failure, Unacked hands back the records as
// they were ingested, in memory the caller owns, although the caller reused
// its buffers and the stream has closed.
func TestUnackedAreCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newScripted(nil)
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{})
		buf := []byte(`{"n":0}`)
		batch := [][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)}
		ingestOrFail := func(f func() (int64, error)) {
			if _, err := f(); err != nil {
				t.Fatal(err)
			}
		}
		ingestOrFail(func() (int64, error) { return s.IngestRecord(context.Background(), buf) })
		ingestOrFail(func() (int64, error) { return s.IngestBatch(context.Background(), batch) })
		copy(buf, `{"n":9}`)
		copy(batch[0], `{"n":9}`)
		batch[1] = []byte(`{"n":9}`)
		settle(time.Second)
		c.resp <- ackOf(5) // above anything sent: the stream fails
		settle(time.Second)
		if err := s.Close(context.Background()); err == nil {
			t.Fatal("the stream closed cleanly after a bogus ack")
		}
		got := s.Unacked()
		want := []core.Batch{{Offset: 0, Records: [][]byte{[]byte(`{"n":0}`)}},
			{Offset: 1, Records: [][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)}}}
		if !sameBatches(got, want) {
			t.Fatalf("Unacked after close: %s, want %s", batchesString(got), batchesString(want))
		}
		got[0].Records[0][0] = 'X' // the caller's own memory: nothing else changes
		if again := s.Unacked(); !sameBatches(again, want) {
			t.Fatalf("Unacked changed when the caller wrote to an earlier result: %s", batchesString(again))
		}
	})
}

func sameBatches(a, b []core.Batch) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Offset != b[i].Offset || len(a[i].Records) != len(b[i].Records) {
			return false
		}
		for j := range a[i].Records {
			if !bytes.Equal(a[i].Records[j], b[i].Records[j]) {
				return false
			}
		}
	}
	return true
}

func batchesString(bs []core.Batch) string {
	var b strings.Builder
	for _, x := range bs {
		fmt.Fprintf(&b, "%d:%q ", x.Offset, x.Records)
	}
	return b.String()
}
