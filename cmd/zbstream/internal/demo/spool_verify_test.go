package demo

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/server"
)

// verifySpoolWhole is the -spool verification as it was before it read
// batch by batch: the whole stream at once (Records).
func verifySpoolWhole(t *testing.T, st server.Store, cfg config, sc *spoolScore) (spoolVerification, error) {
	t.Helper()
	var v spoolVerification
	batches, err := st.Records(t.Context(), cfg.StreamID)
	if err != nil {
		return v, err
	}
	count := make([]int, cfg.Records)
	at := make([]int64, cfg.Records)
	for _, b := range batches {
		for _, r := range b.Records {
			var rec struct {
				Seq int `json:"seq"`
			}
			if err := json.Unmarshal(r, &rec); err != nil || rec.Seq < 0 || rec.Seq >= cfg.Records {
				return v, errNotFromSource
			}
			v.stored++
			count[rec.Seq]++
			at[rec.Seq] = b.Offset
		}
	}
	for _, n := range count {
		if n > 1 {
			v.duplicates += n - 1
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	covered := make([]bool, cfg.Records)
	for seq, c := range sc.returned {
		for s := seq; s < seq+c.n; s++ {
			covered[s] = true
			v.returnedRecs++
			switch {
			case count[s] == 0:
				v.lost++
			case at[s] != c.off:
				v.misplaced++
			}
		}
	}
	for seq, n := range sc.inflight {
		for s := seq; s < seq+n; s++ {
			covered[s] = true
			if count[s] > 0 {
				v.flightLanded++
			} else {
				v.flightNot++
			}
		}
	}
	for s, c := range covered {
		if !c {
			v.untaken++
			if count[s] > 0 {
				return v, errNotFromSource
			}
		}
	}
	return v, nil
}

// TestDemoVerifySpoolStreams: the -spool verification reads one batch at
// a time, gets what the whole-stream verification got, and still detects
// a duplicate, a lost call, a call stored at another offset and source
// records no client took.
func TestDemoVerifySpoolStreams(t *testing.T) {
	const n, batch = 100, 10
	call := func(k int) []int { return seqRange(k*batch, (k+1)*batch) }
	calls := func(ks ...int) [][]int {
		var out [][]int
		for _, k := range ks {
			out = append(out, call(k))
		}
		return out
	}
	// returned says call k returned at offset offs[k] (-1: in flight;
	// -2: never taken).
	score := func(offs ...int64) *spoolScore {
		sc := &spoolScore{returned: map[int]spoolCall{}, inflight: map[int]int{}}
		for k, off := range offs {
			switch off {
			case -1:
				sc.inflight[k*batch] = batch
			case -2:
			default:
				sc.returned[k*batch] = spoolCall{n: batch, off: off}
			}
		}
		return sc
	}
	inOrder := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, tc := range []struct {
		name    string
		batches [][]int
		sc      *spoolScore
		want    spoolVerification
		ok      bool
	}{
		{"clean", calls(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), score(inOrder...),
			spoolVerification{stored: n, returnedRecs: n}, true},
		{"duplicate", calls(0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9), score(0, 1, 2, 4, 5, 6, 7, 8, 9, 10),
			spoolVerification{stored: n + batch, returnedRecs: n, duplicates: batch}, false},
		{"lost", calls(0, 1, 2, 3, 5, 6, 7, 8, 9), score(0, 1, 2, 3, 9, 4, 5, 6, 7, 8),
			spoolVerification{stored: n - batch, returnedRecs: n, lost: batch}, false},
		{"misplaced", calls(0, 1, 2, 4, 3, 5, 6, 7, 8, 9), score(inOrder...),
			spoolVerification{stored: n, returnedRecs: n, misplaced: 2 * batch}, false},
		{"in flight", calls(0, 1, 2, 3, 4, 5, 6, 7, 8), score(0, 1, 2, 3, 4, 5, 6, 7, -1, -1),
			spoolVerification{stored: n - batch, returnedRecs: n - 2*batch, flightLanded: batch, flightNot: batch}, true},
		{"untaken", calls(0, 1, 2, 3, 4, 5, 6, 7, 8), score(0, 1, 2, 3, 4, 5, 6, 7, 8, -2),
			spoolVerification{stored: n - batch, returnedRecs: n - batch, untaken: batch}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, ids := newStore(t, server.KindPersistent, stream{batches: tc.batches})
			cfg := config{Records: n, StreamID: ids[0]}
			c := &countingStore{batchStore: st}
			var p readProgress
			v, err := verifySpoolStore(t.Context(), c, cfg, tc.sc, &p)
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.want {
				t.Errorf("verification %+v, want %+v", v, tc.want)
			}
			if v.ok() != tc.ok {
				t.Errorf("ok %v, want %v", !tc.ok, tc.ok)
			}
			if whole, err := verifySpoolWhole(t, st, cfg, tc.sc); err != nil || whole != v {
				t.Errorf("whole-stream verification %+v (%v), streaming %+v", whole, err, v)
			}
			if p.read.Load() != int64(v.stored) || p.total.Load() != int64(v.stored) {
				t.Errorf("progress %d of %d, want %d of %d", p.read.Load(), p.total.Load(), v.stored, v.stored)
			}
			checkBounded(t, c, []stream{{batches: tc.batches}}, ids)
		})
	}
}

// TestDemoVerifySpoolErrors: a record stored that no client took, a record
// not from the source and a stream that does not exist fail.
func TestDemoVerifySpoolErrors(t *testing.T) {
	seqs := seqRange(0, 100)
	st, ids := newStore(t, server.KindPersistent, stream{batches: seqBatches(seqs, 10)})
	sc := &spoolScore{returned: map[int]spoolCall{}, inflight: map[int]int{}}
	for k := range 9 { // the last call stored, but no client said it took it
		sc.returned[k*10] = spoolCall{n: 10, off: int64(k)}
	}
	_, err := verifySpoolStore(t.Context(), st, config{Records: 100, StreamID: ids[0]}, sc, &readProgress{})
	if err == nil || !strings.Contains(err.Error(), "no client reported taking it") {
		t.Errorf("untaken but stored: %v", err)
	}
	_, err = verifySpoolStore(t.Context(), st, config{Records: 50, StreamID: ids[0]}, sc, &readProgress{})
	if err == nil || !strings.Contains(err.Error(), "not from the source") {
		t.Errorf("record past the source: %v", err)
	}
	_, err = verifySpoolStore(t.Context(), st, config{Records: 100, StreamID: "nope"}, sc, &readProgress{})
	if err == nil {
		t.Error("a stream that does not exist: no error")
	}
}
