package record_test

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/core"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

func TestFramedSize(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want int64
	}{
		{0, 2}, {1, 3}, {127, 129}, {128, 131}, {16383, 16386}, {16384, 16388},
		{1<<21 - 1, 1<<21 + 3}, {1 << 21, 1<<21 + 5}, {10 << 20, 10<<20 + 5},
	} {
		if got := record.FramedSize(tc.n); got != tc.want {
			t.Errorf("FramedSize(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestCallSizeIsTheWire: a call's size is what its records take in the
// generated messages: the batch's record list, or the record field of a
// single-record request.
func TestCallSizeIsTheWire(t *testing.T) {
	for _, sizes := range [][]int{nil, {0}, {1}, {127, 128}, {0, 0, 0}, {5, 300, 20000, 1}} {
		recs := make([][]byte, len(sizes))
		strs := make([]string, len(sizes))
		for i, n := range sizes {
			recs[i] = bytes.Repeat([]byte{'x'}, n)
			strs[i] = string(recs[i])
		}
		got := record.CallSize(recs)
		if want := int64(proto.Size(&ingestpb.ProtoEncodedRecordBatch{Records: recs})); got != want {
			t.Errorf("CallSize(%v) = %d, proto batch %d", sizes, got, want)
		}
		if want := int64(proto.Size(&ingestpb.JsonRecordBatch{Records: strs})); got != want {
			t.Errorf("CallSize(%v) = %d, JSON batch %d", sizes, got, want)
		}
		if len(recs) == 1 {
			one := &ingestpb.IngestRecordRequest{Record: &ingestpb.IngestRecordRequest_JsonRecord{JsonRecord: strs[0]}}
			if want := int64(proto.Size(one)); got != want {
				t.Errorf("CallSize(%v) = %d, single-record request %d", sizes, got, want)
			}
		}
	}
}

// TestCoreCountsTheSame: the core, which owns the per-call limit and
// imports neither protobuf nor this package, has its own FramedSize and
// CallSize; they must be these.
func TestCoreCountsTheSame(t *testing.T) {
	sizes := []int{}
	for n := range 300 {
		sizes = append(sizes, n)
	}
	for _, p := range []int{1 << 14, 1 << 21, 1 << 28} {
		sizes = append(sizes, p-1, p, p+1)
	}
	sizes = append(sizes, math.MaxInt32)
	for _, n := range sizes {
		if c, r := core.FramedSize(n), record.FramedSize(n); c != r {
			t.Errorf("FramedSize(%d): core %d, record %d", n, c, r)
		}
	}
	recs := [][]byte{nil, {}, make([]byte, 127), make([]byte, 128), make([]byte, 20000)}
	if c, r := core.CallSize(recs), record.CallSize(recs); c != r {
		t.Errorf("CallSize: core %d, record %d", c, r)
	}
}
