package io_test

import (
	"bytes"
	"context"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// framedRead is what a Send read of the call it was lent.
type framedRead struct {
	framed  []byte
	records [][]byte
	aliased bool // every non-empty record lies within framed
}

// readFramed is a scriptedTransport read hook that records each call.
func readFramed(sent chan<- framedRead) func(streamio.Call) {
	return func(call streamio.Call) {
		r := framedRead{framed: bytes.Clone(call.Framed), aliased: len(call.Framed) > 0}
		for _, rec := range call.Records {
			r.records = append(r.records, bytes.Clone(rec))
			r.aliased = r.aliased && (len(rec) == 0 || aliases(call.Framed, rec))
		}
		sent <- r
	}
}

// recordList is records framed as a batch message's record list.
func recordList(records [][]byte) []byte {
	var b []byte
	for _, r := range records {
		b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), r)
	}
	return b
}

// TestSendGetsTheBatchFramed: a batch of a stream that copies its records
// reaches Send with Framed, its record list as the batch message carries
// it, the records pointing into it, and again when it is sent anew after
// a reconnect; a batch larger than an arena block (copied record by
// record) and a single record have no Framed.
func TestSendGetsTheBatchFramed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		batch := [][]byte{[]byte(`{"a":1}`), {}, bytes.Repeat([]byte("x"), 300), bytes.Repeat([]byte("y"), 20_000)}
		large := [][]byte{bytes.Repeat([]byte("l"), 600<<10), bytes.Repeat([]byte("m"), 600<<10)} // over a 1 MiB block
		sent := make(chan framedRead, 16)
		tr := newScripted(nil)
		tr.read = readFramed(sent)
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{})
		if _, err := s.IngestBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		if _, err := s.IngestBatch(context.Background(), large); err != nil {
			t.Fatal(err)
		}
		if _, err := s.IngestRecord(context.Background(), batch[0]); err != nil {
			t.Fatal(err)
		}
		check := func(when string) {
			t.Helper()
			if got := <-sent; !bytes.Equal(got.framed, recordList(batch)) || !got.aliased {
				t.Errorf("%s: the batch sent with Framed of %d bytes (records within it: %v), want its record list (%d bytes)", when, len(got.framed), got.aliased, len(recordList(batch)))
			}
			if got := <-sent; got.framed != nil || len(got.records) != 2 || !bytes.Equal(got.records[1], large[1]) {
				t.Errorf("%s: the batch over a block sent with Framed of %d bytes, or its records changed", when, len(got.framed))
			}
			if got := <-sent; got.framed != nil {
				t.Errorf("%s: a single record sent with Framed (%d bytes)", when, len(got.framed))
			}
		}
		check("first send")
		c.resp <- core.Response{Kind: core.RespCloseSignal} // the server rotates: everything is sent again
		c = <-tr.conns
		c.resp <- core.Response{Kind: core.RespResume}
		settle(time.Second)
		check("after a reconnect")
		c.resp <- ackOf(2)
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSendGetsNoFramedWithNoCopy: with NoCopy the records are the
// caller's, not framed: Send gets no Framed.
func TestSendGetsNoFramedWithNoCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sent := make(chan framedRead, 4)
		tr := newScripted(nil)
		tr.read = readFramed(sent)
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{NoCopy: true})
		if _, err := s.IngestBatch(context.Background(), [][]byte{[]byte(`{}`), []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if got := <-sent; got.framed != nil {
			t.Errorf("NoCopy: a batch of the caller's records sent with Framed (%d bytes)", len(got.framed))
		}
		c.resp <- ackOf(0)
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// aliases reports whether rec lies within buf's memory.
func aliases(buf, rec []byte) bool {
	for i := range len(buf) - len(rec) + 1 {
		if &buf[i] == &rec[0] {
			return true
		}
	}
	return false
}
