package grpcio

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

func TestEncodeBuffersSizes(t *testing.T) {
	var p encodeBuffers
	for _, n := range []int{0, 1, 255, 256, 257, 32 << 10, 32<<10 + 1, 10 << 20, 16 << 20} {
		b := p.Get(n)
		if len(*b) != n {
			t.Fatalf("Get(%d): length %d", n, len(*b))
		}
		if c := cap(*b); c < n || c&(c-1) != 0 || c < 1<<encodeMinShift {
			t.Fatalf("Get(%d): capacity %d, want a power of two of at least %d and %d", n, c, n, 1<<encodeMinShift)
		}
		p.Put(b)
	}
	// Above the largest class: a buffer of its own, left to the collector.
	b := p.Get(16<<20 + 1)
	if len(*b) != 16<<20+1 {
		t.Fatalf("Get above the largest class: length %d", len(*b))
	}
	p.Put(b)
	odd := make([]byte, 100, 300) // not a class's capacity: ignored
	p.Put(&odd)
}

// TestEncodeBuffersComeBack: every buffer the pool hands out is one gRPC
// gives back to it once written. gRPC keeps a buffer of its pooling
// threshold's size or less as a plain slice and never returns it, so a
// class that small would be allocated afresh for every call that takes
// it: the encodings of small records did exactly that.
func TestEncodeBuffersComeBack(t *testing.T) {
	var p encodeBuffers
	for _, n := range []int{0, 1, 20, 255, 512, 1 << 10, 1<<10 + 1, 32 << 10} {
		b := p.Get(n)
		if c := cap(*b); mem.IsBelowBufferPoolingThreshold(c) {
			t.Errorf("Get(%d): capacity %d, which gRPC never gives back to the pool", n, c)
		}
		if _, plain := mem.NewBuffer(b, &p).(mem.SliceBuffer); plain {
			t.Errorf("Get(%d): gRPC takes the buffer for a plain slice", n)
		}
	}
}

// TestEncodeOverDirtyBuffers: buffers given back full of other bytes, and
// handed out again without being cleared, still make the exact encoding:
// an encoding writes every byte before anything reads it.
func TestEncodeOverDirtyBuffers(t *testing.T) {
	var p encodeBuffers
	for _, n := range []int{256, 1 << 10, 32 << 10, 512 << 10} {
		for range 4 {
			b := p.Get(n)
			for i := range *b {
				(*b)[i] = 0xA5
			}
			p.Put(b)
		}
	}
	rec := bytes.Repeat([]byte("r"), 700)
	for i, call := range []streamio.Call{
		{Wire: 1, Record: []byte(`{"a":1}`)},
		{Wire: 2, Records: [][]byte{rec, {}, rec, []byte(`{}`)}},
		{Wire: 3, Record: bytes.Repeat([]byte("q"), 300_000)},
	} {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(reference(core.Persistent, core.RecordJSON, call))
		if err != nil {
			t.Fatal(err)
		}
		data := encodeCall(&p, core.Persistent, core.RecordJSON, call).buffers()
		if got := data.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("call %d over dirty buffers differs from proto.Marshal:\n got %x\nwant %x", i, got[:min(len(got), 64)], want[:min(len(want), 64)])
		}
		data.Free()
	}
}
