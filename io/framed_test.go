package io_test

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// TestSendGetsTheBatchFramed: a batch of a stream that copies its records
// reaches Send with Framed, its record list as the batch message carries
// it, the records pointing into it; with NoCopy (the caller's records,
// not framed) and for a single record, Framed is nil.
func TestSendGetsTheBatchFramed(t *testing.T) {
	batch := [][]byte{[]byte(`{"a":1}`), {}, bytes.Repeat([]byte("x"), 300)}
	var want []byte
	for _, r := range batch {
		want = protowire.AppendBytes(protowire.AppendTag(want, 1, protowire.BytesType), r)
	}
	for _, noCopy := range []bool{false, true} {
		type read struct {
			framed  []byte
			aliased bool // every record points into framed
		}
		sent := make(chan read, 4)
		tr := newScripted(nil)
		tr.read = func(call streamio.Call) {
			r := read{framed: bytes.Clone(call.Framed), aliased: len(call.Framed) > 0}
			for _, rec := range call.Records {
				r.aliased = r.aliased && (len(rec) == 0 || aliases(call.Framed, rec))
			}
			sent <- r
		}
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{NoCopy: noCopy})
		if _, err := s.IngestBatch(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		got := <-sent
		switch {
		case noCopy && got.framed != nil:
			t.Errorf("NoCopy: a batch of the caller's records sent with Framed (%d bytes)", len(got.framed))
		case !noCopy && (!bytes.Equal(got.framed, want) || !got.aliased):
			t.Errorf("the batch sent with Framed %x (records within it: %v), want %x", got.framed, got.aliased, want)
		}
		if _, err := s.IngestRecord(context.Background(), batch[0]); err != nil {
			t.Fatal(err)
		}
		if got := <-sent; got.framed != nil {
			t.Errorf("a single record sent with Framed (%d bytes)", len(got.framed))
		}
		c.resp <- ackOf(1)
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
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
