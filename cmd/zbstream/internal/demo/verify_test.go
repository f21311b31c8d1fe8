package demo

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/server"
)

var errNotFromSource = errors.New("a record that is not from the source")

// verifyWhole is the verification as it was before it read batch by
// batch: the whole stream at once (Records). The tests hold the streaming
// verification to the same results.
func verifyWhole(t *testing.T, st server.Store, cfg config) (verification, error) {
	t.Helper()
	var v verification
	metas, err := st.Streams(t.Context())
	if err != nil {
		return v, err
	}
	seen := make([]int, cfg.Records)
	last := -1
	for _, m := range metas {
		if m.Table != demoTable {
			continue
		}
		v.streams++
		batches, err := st.Records(t.Context(), m.ID)
		if err != nil {
			return v, err
		}
		for _, b := range batches {
			for _, r := range b.Records {
				var rec struct {
					Seq int `json:"seq"`
				}
				if err := json.Unmarshal(r, &rec); err != nil || rec.Seq < 0 || rec.Seq >= cfg.Records {
					return v, errNotFromSource
				}
				v.stored++
				seen[rec.Seq]++
				if rec.Seq < last && !cfg.Ephemeral {
					v.outOfOrder++
				}
				last = rec.Seq
			}
		}
	}
	for _, n := range seen {
		switch {
		case n == 0:
			v.lost++
		case n > 1:
			v.duplicates += n - 1
		}
	}
	return v, nil
}

// checkBounded checks that the verification read every batch of the
// demo's streams exactly once, each read one batch, and nothing else.
func checkBounded(t *testing.T, c *countingStore, streams []stream, ids []string) {
	t.Helper()
	want, biggest := 0, 0
	for i, s := range streams {
		if s.table != "" && s.table != demoTable {
			if len(c.reads[ids[i]]) != 0 {
				t.Errorf("stream %s of table %s was read", ids[i], s.table)
			}
			continue
		}
		want += len(s.batches)
		for off, b := range s.batches {
			biggest = max(biggest, len(b))
			if n := c.reads[ids[i]][int64(off)]; n != 1 {
				t.Errorf("stream %s offset %d read %d times, want once", ids[i], off, n)
			}
		}
	}
	if c.calls != want {
		t.Errorf("%d reads, want %d: one per batch", c.calls, want)
	}
	if c.maxRecords > biggest {
		t.Errorf("a read returned %d records, more than the biggest batch (%d)", c.maxRecords, biggest)
	}
}

// TestDemoVerifyStreams: the verification reads one batch at a time, gets
// what the whole-stream verification got, and still detects a duplicate,
// a lost record and a reordering.
func TestDemoVerifyStreams(t *testing.T) {
	const n = 1000
	all := seqRange(0, n)
	without := func(seq int) []int { return slices.Delete(slices.Clone(all), seq, seq+1) }
	dup := slices.Insert(slices.Clone(all), 500, 500) // 500 twice, adjacent
	swapped := slices.Clone(all)
	swapped[10], swapped[11] = 11, 10
	for _, tc := range []struct {
		name      string
		ephemeral bool
		streams   []stream
		want      verification
		ok        bool
	}{
		{"clean", false, []stream{{batches: seqBatches(all, 7)}},
			verification{stored: n, streams: 1}, true},
		{"duplicate", false, []stream{{batches: seqBatches(dup, 7)}},
			verification{stored: n + 1, duplicates: 1, streams: 1}, false},
		{"replayed batch", false, []stream{{batches: append(seqBatches(all, 7), seqRange(990, 1000))}},
			verification{stored: n + 10, duplicates: 10, outOfOrder: 1, streams: 1}, false},
		{"lost", false, []stream{{batches: seqBatches(without(321), 7)}},
			verification{stored: n - 1, lost: 1, streams: 1}, false},
		{"reordered", false, []stream{{batches: seqBatches(swapped, 7)}},
			verification{stored: n, outOfOrder: 1, streams: 1}, false},
		{"other table ignored", false, []stream{{batches: seqBatches(all, 7)}, {table: "main.other.t", batches: [][]int{{5000, 3}}}},
			verification{stored: n, streams: 1}, true},
		{"ephemeral resent", true, []stream{{batches: seqBatches(seqRange(0, 600), 7)}, {batches: seqBatches(seqRange(550, n), 7)}},
			verification{stored: n + 50, duplicates: 50, streams: 2}, true},
		{"ephemeral lost", true, []stream{{batches: seqBatches(seqRange(0, 600), 7)}, {batches: seqBatches(seqRange(601, n), 7)}},
			verification{stored: n - 1, lost: 1, streams: 2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := server.KindPersistent
			if tc.ephemeral {
				kind = server.KindEphemeral
			}
			st, ids := newStore(t, kind, tc.streams...)
			cfg := config{Records: n, Ephemeral: tc.ephemeral}
			c := &countingStore{batchStore: st}
			var p readProgress
			v, err := verifyStore(t.Context(), c, cfg, &p)
			if err != nil {
				t.Fatal(err)
			}
			if v != tc.want {
				t.Errorf("verification %+v, want %+v", v, tc.want)
			}
			if v.ok(tc.ephemeral) != tc.ok {
				t.Errorf("ok %v, want %v", !tc.ok, tc.ok)
			}
			if whole, err := verifyWhole(t, st, cfg); err != nil || whole != v {
				t.Errorf("whole-stream verification %+v (%v), streaming %+v", whole, err, v)
			}
			if p.read.Load() != int64(v.stored) || p.total.Load() != int64(v.stored) {
				t.Errorf("progress %d of %d, want %d of %d", p.read.Load(), p.total.Load(), v.stored, v.stored)
			}
			checkBounded(t, c, tc.streams, ids)
		})
	}
}

// TestDemoVerifyForeignRecord: a record that is not from the source (seq
// out of range, or not the source's JSON) fails the verification.
func TestDemoVerifyForeignRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"seq past the source", record(1000, 64)},
		{"negative seq", record(-1, 64)},
		{"not JSON", []byte("not json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, ids := newStore(t, server.KindPersistent, stream{batches: seqBatches(seqRange(0, 1000), 7)})
			if err := st.Append(t.Context(), ids[0], []server.Batch{{Offset: 143, Records: [][]byte{tc.rec}}}); err != nil {
				t.Fatal(err)
			}
			_, err := verifyStore(t.Context(), st, config{Records: 1000}, &readProgress{})
			if err == nil || !strings.Contains(err.Error(), "not from the source") {
				t.Errorf("error %v, want one about a record not from the source", err)
			}
			if _, err := verifyWhole(t, st, config{Records: 1000}); err == nil {
				t.Error("the whole-stream verification accepted it")
			}
		})
	}
}
