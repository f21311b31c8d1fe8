package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// storeEngine opens a fresh Store of one engine for a test.
type storeEngine struct {
	name string
	open func(t *testing.T) Store
}

func storeEngines() []storeEngine {
	return []storeEngine{
		{"memory", func(t *testing.T) Store { return NewMemoryStore() }},
		{"bolt", func(t *testing.T) Store {
			s, err := OpenBoltStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
}

// testRecord is the deterministic content of record i of batch off of a
// stream, with varying sizes (including empty).
func testRecord(stream string, off int64, i int) []byte {
	n := int((off*31 + int64(i)*17) % 1500)
	prefix := fmt.Sprintf("%s/%d/%d:", stream, off, i)
	b := make([]byte, 0, len(prefix)+n)
	b = append(b, prefix...)
	for j := range n {
		b = append(b, byte(int(off)+i+j))
	}
	return b
}

func testBatch(stream string, off int64, n int) Batch {
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = testRecord(stream, off, i)
	}
	return Batch{Offset: off, Records: recs}
}

func mustCreate(t *testing.T, s Store, meta StreamMeta) StreamMeta {
	t.Helper()
	m, created, err := s.CreateStream(context.Background(), meta)
	if err != nil {
		t.Fatalf("CreateStream(%+v): %v", meta, err)
	}
	if !created {
		t.Fatalf("CreateStream(%+v): not created", meta)
	}
	return m
}

// checkRecords asserts that stream id holds exactly batches [0, n) built
// by testBatch with per records each, and the matching metadata.
func checkRecords(t *testing.T, s Store, id string, n int64, per int) {
	t.Helper()
	ctx := context.Background()
	got, err := s.Records(ctx, id)
	if err != nil {
		t.Fatalf("Records(%q): %v", id, err)
	}
	if int64(len(got)) != n {
		t.Fatalf("Records(%q): %d batches, want %d", id, len(got), n)
	}
	for i, b := range got {
		want := testBatch(id, int64(i), per)
		if b.Offset != int64(i) || len(b.Records) != per {
			t.Fatalf("Records(%q)[%d]: offset %d with %d records, want %d with %d", id, i, b.Offset, len(b.Records), i, per)
		}
		for j := range b.Records {
			if !bytes.Equal(b.Records[j], want.Records[j]) {
				t.Fatalf("Records(%q)[%d].Records[%d] differs", id, i, j)
			}
		}
	}
	m, err := s.Stream(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Watermark != n-1 || m.Records != n*int64(per) {
		t.Fatalf("Stream(%q): watermark %d records %d, want %d and %d", id, m.Watermark, m.Records, n-1, n*int64(per))
	}
}

// TestStoreConformance runs one suite against every engine.
func TestStoreConformance(t *testing.T) {
	for _, e := range storeEngines() {
		t.Run(e.name, func(t *testing.T) { runStoreSuite(t, e.open) })
	}
}

func runStoreSuite(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()

	t.Run("Create", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		in := StreamMeta{
			ID: "a", Kind: KindPersistent, Table: "cat.sch.tbl", Principal: "alice",
			RecordType: 2, Descriptor: []byte{1, 2, 3}, AvroSchema: `{"type":"record","name":"R","fields":[]}`,
			Watermark: 42, Records: 7, Retired: true,
		}
		m := mustCreate(t, s, in)
		want := in
		want.Watermark, want.Records, want.Retired = -1, 0, false
		if !metaEqual(m, want) {
			t.Fatalf("created %+v, want %+v", m, want)
		}
		got, err := s.Stream(ctx, "a")
		if err != nil || !metaEqual(got, want) {
			t.Fatalf("Stream = %+v, %v; want %+v", got, err, want)
		}
		if _, _, err := s.CreateStream(ctx, StreamMeta{ID: "a", Kind: KindEphemeral}); err == nil {
			t.Fatal("CreateStream with an existing id succeeded")
		}
		// No id: the store mints a unique one.
		x := mustCreate(t, s, StreamMeta{Kind: KindEphemeral, Table: "t"})
		y := mustCreate(t, s, StreamMeta{Kind: KindEphemeral, Table: "t"})
		if x.ID == "" || y.ID == "" || x.ID == y.ID {
			t.Fatalf("minted ids %q and %q", x.ID, y.ID)
		}
	})

	t.Run("IdempotentCreate", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		first := mustCreate(t, s, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "alice", RequestID: "req-1"})
		if err := s.Append(ctx, first.ID, []Batch{testBatch(first.ID, 0, 2)}); err != nil {
			t.Fatal(err)
		}
		again, created, err := s.CreateStream(ctx, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "alice", RequestID: "req-1"})
		if err != nil || created {
			t.Fatalf("repeated create: created=%v err=%v", created, err)
		}
		if again.ID != first.ID || again.Table != "t" || again.Watermark != 0 || again.Records != 2 {
			t.Fatalf("repeated create returned %+v, want stream %q at watermark 0", again, first.ID)
		}
		other := mustCreate(t, s, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "alice", RequestID: "req-2"})
		if other.ID == first.ID {
			t.Fatal("a different RequestID returned the same stream")
		}
		// A RequestID is scoped to its principal and table.
		for _, m := range []StreamMeta{
			{Kind: KindPersistent, Table: "t", Principal: "carol", RequestID: "req-1"},
			{Kind: KindPersistent, Table: "other", Principal: "alice", RequestID: "req-1"},
		} {
			got := mustCreate(t, s, m)
			if got.ID == first.ID || got.Watermark != -1 || got.Principal != m.Principal || got.Table != m.Table {
				t.Fatalf("create %+v returned %+v: another scope's stream", m, got)
			}
		}
		streams, err := s.Streams(ctx)
		if err != nil || len(streams) != 4 {
			t.Fatalf("Streams = %d, %v; want 4", len(streams), err)
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		if _, err := s.Stream(ctx, "nope"); !errors.Is(err, ErrStreamNotFound) {
			t.Errorf("Stream: %v", err)
		}
		if err := s.Append(ctx, "nope", []Batch{testBatch("nope", 0, 1)}); !errors.Is(err, ErrStreamNotFound) {
			t.Errorf("Append: %v", err)
		}
		if err := s.Append(ctx, "nope", nil); !errors.Is(err, ErrStreamNotFound) {
			t.Errorf("empty Append: %v", err)
		}
		if _, err := s.Retire(ctx, "nope"); !errors.Is(err, ErrStreamNotFound) {
			t.Errorf("Retire: %v", err)
		}
		if _, err := s.Records(ctx, "nope"); !errors.Is(err, ErrStreamNotFound) {
			t.Errorf("Records: %v", err)
		}
	})

	t.Run("AppendContract", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		id := mustCreate(t, s, StreamMeta{ID: "s", Kind: KindEphemeral}).ID
		if err := s.Append(ctx, id, []Batch{testBatch(id, 1, 3)}); err == nil {
			t.Fatal("append at offset 1 on an empty stream succeeded")
		}
		if err := s.Append(ctx, id, []Batch{testBatch(id, 0, 3), testBatch(id, 1, 3)}); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, s, id, 2, 3)
		for name, bs := range map[string][]Batch{
			"duplicate":        {testBatch(id, 1, 3)},
			"below watermark":  {testBatch(id, 0, 3)},
			"gap":              {testBatch(id, 3, 3)},
			"gap inside":       {testBatch(id, 2, 3), testBatch(id, 4, 3)},
			"not in order":     {testBatch(id, 3, 3), testBatch(id, 2, 3)},
			"duplicate inside": {testBatch(id, 2, 3), testBatch(id, 2, 3)},
		} {
			if err := s.Append(ctx, id, bs); err == nil {
				t.Errorf("%s: append succeeded", name)
			}
		}
		// Refused appends stored nothing, not even a prefix.
		checkRecords(t, s, id, 2, 3)
		if err := s.Append(ctx, id, nil); err != nil {
			t.Fatalf("empty append: %v", err)
		}
		if err := s.Append(ctx, id, []Batch{testBatch(id, 2, 3)}); err != nil {
			t.Fatal(err)
		}
		checkRecords(t, s, id, 3, 3)
	})

	t.Run("Watermark", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		id := mustCreate(t, s, StreamMeta{ID: "w", Kind: KindPersistent}).ID
		m, _ := s.Stream(ctx, id)
		if m.Watermark != -1 || m.Records != 0 {
			t.Fatalf("new stream: watermark %d records %d", m.Watermark, m.Records)
		}
		var want int64
		for off := int64(0); off < 20; {
			n := int(off%3) + 1
			var bs []Batch
			for range n {
				bs = append(bs, testBatch(id, off, 4))
				off++
			}
			if err := s.Append(ctx, id, bs); err != nil {
				t.Fatal(err)
			}
			want = off - 1
			m, err := s.Stream(ctx, id)
			if err != nil || m.Watermark != want {
				t.Fatalf("watermark %d, %v; want %d", m.Watermark, err, want)
			}
		}
		checkRecords(t, s, id, want+1, 4)
	})

	t.Run("RecordsExactBytes", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		id := mustCreate(t, s, StreamMeta{ID: "r", Kind: KindEphemeral}).ID
		in := []Batch{
			{Offset: 0, Records: [][]byte{[]byte("{}"), {}, {0, 0xff, 0, 0xfe}}},
			{Offset: 1, Records: [][]byte{bytes.Repeat([]byte{0xab}, 1<<20)}},
			{Offset: 2, Records: [][]byte{}},
		}
		if err := s.Append(ctx, id, in); err != nil {
			t.Fatal(err)
		}
		in[0].Records[0][0] = 'X' // the store keeps its own copy
		got, err := s.Records(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		in[0].Records[0][0] = '{'
		if len(got) != len(in) {
			t.Fatalf("%d batches, want %d", len(got), len(in))
		}
		for i := range in {
			if got[i].Offset != in[i].Offset || len(got[i].Records) != len(in[i].Records) {
				t.Fatalf("batch %d: %+v", i, got[i].Offset)
			}
			for j := range in[i].Records {
				if !bytes.Equal(got[i].Records[j], in[i].Records[j]) {
					t.Fatalf("batch %d record %d differs", i, j)
				}
			}
		}
		if m, _ := s.Stream(ctx, id); m.Records != 4 || m.Watermark != 2 {
			t.Fatalf("meta %+v", m)
		}
	})

	t.Run("Retire", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		id := mustCreate(t, s, StreamMeta{ID: "x", Kind: KindPersistent}).ID
		if err := s.Append(ctx, id, []Batch{testBatch(id, 0, 1), testBatch(id, 1, 1)}); err != nil {
			t.Fatal(err)
		}
		wm, err := s.Retire(ctx, id)
		if err != nil || wm != 1 {
			t.Fatalf("Retire = %d, %v", wm, err)
		}
		if err := s.Append(ctx, id, []Batch{testBatch(id, 2, 1)}); err == nil {
			t.Fatal("append to a retired stream succeeded")
		}
		if err := s.Append(ctx, id, nil); err == nil {
			t.Fatal("empty append to a retired stream succeeded")
		}
		if wm, err := s.Retire(ctx, id); err != nil || wm != 1 {
			t.Fatalf("second Retire = %d, %v", wm, err)
		}
		m, _ := s.Stream(ctx, id)
		if !m.Retired || m.Watermark != 1 {
			t.Fatalf("meta %+v", m)
		}
		checkRecords(t, s, id, 2, 1)
	})

	t.Run("StreamsOrdered", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		if got, err := s.Streams(ctx); err != nil || len(got) != 0 {
			t.Fatalf("empty store: %v, %v", got, err)
		}
		ids := []string{"m", "b", "z", "a", "B", "a0", "stream-10", "stream-9"}
		for _, id := range ids {
			mustCreate(t, s, StreamMeta{ID: id, Kind: KindEphemeral, Table: "t-" + id})
		}
		got, err := s.Streams(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var gotIDs []string
		for _, m := range got {
			gotIDs = append(gotIDs, m.ID)
			if m.Table != "t-"+m.ID || m.Watermark != -1 {
				t.Errorf("stream %+v", m)
			}
		}
		want := "B a a0 b m stream-10 stream-9 z"
		if strings.Join(gotIDs, " ") != want {
			t.Fatalf("Streams order %v, want %s", gotIDs, want)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		s := open(t)
		id := mustCreate(t, s, StreamMeta{ID: "c", Kind: KindEphemeral}).ID
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		checks := map[string]error{}
		_, _, checks["CreateStream"] = s.CreateStream(ctx, StreamMeta{ID: "d"})
		_, checks["Stream"] = s.Stream(ctx, id)
		checks["Append"] = s.Append(ctx, id, []Batch{testBatch(id, 0, 1)})
		_, checks["Retire"] = s.Retire(ctx, id)
		_, checks["Streams"] = s.Streams(ctx)
		_, checks["Records"] = s.Records(ctx, id)
		for name, err := range checks {
			if !errors.Is(err, ErrStoreClosed) {
				t.Errorf("%s after Close: %v, want ErrStoreClosed", name, err)
			}
		}
	})

	t.Run("ConcurrentAppends", func(t *testing.T) {
		s := open(t)
		defer s.Close()
		const streams, writersPerStream, perWriter = 8, 3, 15
		var ids []string
		for i := range streams {
			ids = append(ids, mustCreate(t, s, StreamMeta{ID: fmt.Sprintf("c%02d", i), Kind: KindPersistent}).ID)
		}
		// Several writers race on each stream: each reads the watermark
		// and appends at watermark+1; the store must store exactly one of
		// any two racing appends, so the result is dense.
		var wg sync.WaitGroup
		errc := make(chan error, streams*writersPerStream)
		for _, id := range ids {
			for range writersPerStream {
				wg.Go(func() {
					for done := 0; done < perWriter; {
						m, err := s.Stream(ctx, id)
						if err != nil {
							errc <- err
							return
						}
						if s.Append(ctx, id, []Batch{testBatch(id, m.Watermark+1, 2)}) == nil {
							done++
						}
					}
				})
			}
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		for _, id := range ids {
			checkRecords(t, s, id, writersPerStream*perWriter, 2)
		}
	})
}

func metaEqual(a, b StreamMeta) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.Table == b.Table && a.Principal == b.Principal &&
		a.RecordType == b.RecordType && bytes.Equal(a.Descriptor, b.Descriptor) && a.AvroSchema == b.AvroSchema && a.RequestID == b.RequestID &&
		a.Watermark == b.Watermark && a.Records == b.Records && a.Retired == b.Retired
}

// TestStoreBoltReopen: everything is there after closing and reopening the
// durable store on the same directory.
func TestStoreBoltReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := mustCreate(t, s, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "p", RecordType: 1, Descriptor: []byte("desc"), RequestID: "req"})
	b := mustCreate(t, s, StreamMeta{ID: "b", Kind: KindEphemeral, Table: "u"})
	// An Avro stream's writer schema, with characters JSON escapes.
	avroSchema := "{\"type\": \"record\", \"name\": \"R\", \"doc\": \"<é & \\u00e9>\", \"fields\": []}"
	av := mustCreate(t, s, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "p", RecordType: 4, RequestID: "avro", AvroSchema: avroSchema})
	for off := range int64(10) {
		if err := s.Append(ctx, a.ID, []Batch{testBatch(a.ID, off, 5)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, b.ID, []Batch{testBatch(b.ID, 0, 5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Retire(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Streams(ctx)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after, err := s.Streams(ctx)
	if err != nil || len(after) != len(before) {
		t.Fatalf("Streams after reopen: %d, %v; want %d", len(after), err, len(before))
	}
	for i := range before {
		if !metaEqual(before[i], after[i]) {
			t.Fatalf("stream %d: %+v after reopen, was %+v", i, after[i], before[i])
		}
	}
	checkRecords(t, s, a.ID, 10, 5)
	checkRecords(t, s, b.ID, 1, 5)
	if m, err := s.Stream(ctx, av.ID); err != nil || m.AvroSchema != avroSchema || m.RecordType != 4 {
		t.Fatalf("Avro stream after reopen: %+v, %v; want the schema %s", m, err, avroSchema)
	}
	if m, created, err := s.CreateStream(ctx, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "p", RequestID: "req"}); err != nil || created || m.ID != a.ID {
		t.Fatalf("idempotent create after reopen: %v %v %v", m.ID, created, err)
	}
	if c := mustCreate(t, s, StreamMeta{Kind: KindEphemeral}); c.ID == a.ID {
		t.Fatal("minted id reused after reopen")
	}
	if err := s.Append(ctx, a.ID, []Batch{testBatch(a.ID, 10, 5)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, b.ID, []Batch{testBatch(b.ID, 1, 5)}); err == nil {
		t.Fatal("retired stream accepted an append after reopen")
	}
}

// TestStoreBoltGroupCommit: concurrent Appends share commits.
func TestStoreBoltGroupCommit(t *testing.T) {
	ctx := context.Background()
	s, err := OpenBoltStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const writers, per = 16, 20
	for w := range writers {
		mustCreate(t, s, StreamMeta{ID: fmt.Sprintf("g%02d", w), Kind: KindEphemeral})
	}
	before := s.commits.Load()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("g%02d", w)
			for off := range int64(per) {
				if err := s.Append(ctx, id, []Batch{testBatch(id, off, 1)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	commits := s.commits.Load() - before
	t.Logf("%d appends in %d commits", writers*per, commits)
	if commits >= writers*per {
		t.Fatalf("%d appends took %d commits: no group commit", writers*per, commits)
	}
}

const crashDirEnv = "ZBSTREAM_STORE_CRASH_DIR"

// crashStreams is how many streams the crash child writes concurrently.
const crashStreams = 4

// TestStoreCrashChild is the child process of TestStoreBoltCrash: it is
// skipped unless crashDirEnv names a directory. It opens the store there,
// creates its streams or resumes them from their watermarks, and appends
// batches to all of them concurrently, printing "ACK <stream> <offset>"
// once each Append has returned, until it is killed (or 60 s pass).
func TestStoreCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("child process of TestStoreBoltCrash")
	}
	ctx := context.Background()
	s, err := OpenBoltStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(60 * time.Second)
	for i := range crashStreams {
		m, _, err := s.CreateStream(ctx, StreamMeta{ID: fmt.Sprintf("crash-%d", i), Kind: KindPersistent, RequestID: fmt.Sprintf("crash-req-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for off := m.Watermark + 1; time.Now().Before(deadline); off++ {
				if err := s.Append(ctx, m.ID, []Batch{testBatch(m.ID, off, crashRecords(off))}); err != nil {
					t.Error(err)
					return
				}
				out.Lock()
				fmt.Printf("ACK %s %d\n", m.ID, off)
				out.Unlock()
			}
		})
	}
	wg.Wait()
	s.Close()
}

// crashRecords is how many records the crash child puts in batch off.
func crashRecords(off int64) int { return int(off%7) + 1 }

// TestStoreBoltCrash runs TestStoreCrashChild as a real process, kills it
// with SIGKILL while it appends, reopens the store and checks that every
// acknowledged batch is there with its exact bytes, that each watermark is
// the last stored offset, and that nothing is stored twice. It does this
// for several rounds on the same directory, each child resuming where the
// previous one's store stands.
func TestStoreBoltCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := t.TempDir()
	acked := map[string]int64{} // highest acknowledged offset per stream, over all rounds
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStoreCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a number of acks that varies by round, so the kill
		// lands at different points of the commit cycle.
		killAfter := 150 + 97*round
		sc := bufio.NewScanner(stdout)
		n, killed := 0, false
		timeout := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "ACK ") {
				continue
			}
			f := strings.Fields(line)
			if len(f) != 3 {
				t.Fatalf("bad child line %q", line)
			}
			off, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("bad child line %q: %v", line, err)
			}
			if prev, ok := acked[f[1]]; ok && off <= prev {
				t.Fatalf("round %d: child acknowledged %s offset %d after %d", round, f[1], off, prev)
			}
			acked[f[1]] = off
			if n++; n == killAfter && !killed {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
			// Lines the child wrote before it died are read on: they
			// were acknowledged too.
		}
		timeout.Stop()
		err = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child ended after %d acks before being killed: %v\n%s", round, n, err, stderr.String())
		}
		t.Logf("round %d: killed the child after %d acks (%v)", round, n, err)

		s, err := OpenBoltStore(dir)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		ctx := context.Background()
		streams, err := s.Streams(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(streams) != crashStreams {
			t.Fatalf("round %d: %d streams, want %d", round, len(streams), crashStreams)
		}
		for _, m := range streams {
			batches, err := s.Records(ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			var records int64
			for i, b := range batches {
				// Dense from 0: nothing missing, nothing stored twice.
				if b.Offset != int64(i) {
					t.Fatalf("round %d: stream %s batch %d has offset %d", round, m.ID, i, b.Offset)
				}
				want := testBatch(m.ID, b.Offset, crashRecords(b.Offset))
				if len(b.Records) != len(want.Records) {
					t.Fatalf("round %d: stream %s offset %d: %d records, want %d", round, m.ID, b.Offset, len(b.Records), len(want.Records))
				}
				for j := range want.Records {
					if !bytes.Equal(b.Records[j], want.Records[j]) {
						t.Fatalf("round %d: stream %s offset %d record %d differs", round, m.ID, b.Offset, j)
					}
				}
				records += int64(len(b.Records))
			}
			last := int64(len(batches)) - 1
			if m.Watermark != last {
				t.Fatalf("round %d: stream %s watermark %d, last stored offset %d", round, m.ID, m.Watermark, last)
			}
			if m.Records != records {
				t.Fatalf("round %d: stream %s counts %d records, %d stored", round, m.ID, m.Records, records)
			}
			if a, ok := acked[m.ID]; ok && a > last {
				t.Fatalf("round %d: stream %s: offset %d was acknowledged but only %d are stored", round, m.ID, a, last)
			}
			t.Logf("round %d: stream %s: acknowledged up to %d, stored up to %d", round, m.ID, acked[m.ID], last)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
