package bench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
)

// run runs "zbstream bench args..." and returns its exit code and
// outputs.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmds.Run(context.Background(), append([]string{"bench"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestBenchTableCSVSVG runs a tiny bench (one size, short, one run) and
// checks the table's rows, the CSV's columns and the SVG's bars.
func TestBenchTableCSVSVG(t *testing.T) {
	dir := t.TempDir()
	csvPath, svgPath := filepath.Join(dir, "b.csv"), filepath.Join(dir, "b.svg")
	code, out, errs := run(t, "-sizes", "20", "-duration", "50ms", "-rounds", "2", "-batch", "10",
		"-csv", csvPath, "-svg", svgPath)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	checkTable(t, out, []string{"20 B single", "20 B batch 10"})
	checkCSV(t, csvPath, [][2]string{{"20", "single"}, {"20", "batch 10"}})
	checkSVG(t, svgPath, 2)
}

// TestBenchVerboseCPU: with -v, every round names the client's CPU time
// per record, and each cell the two clients' medians.
func TestBenchVerboseCPU(t *testing.T) {
	if _, ok := proc.CPUTime(); !ok {
		t.Skip("no CPU time on this platform")
	}
	code, out, errs := run(t, "-sizes", "20", "-batch", "1", "-duration", "30ms", "-rounds", "2", "-v")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rounds := 0
	for line := range strings.SplitSeq(errs, "\n") {
		if !strings.Contains(line, "until the last ack") {
			continue
		}
		rounds++
		_, cpu, ok := strings.Cut(line, "records/s, ")
		var us float64
		if ok {
			_, err := fmt.Sscanf(cpu, "%f µs of CPU a record", &us)
			ok = err == nil && us > 0
		}
		if !ok {
			t.Errorf("a round without the client's CPU per record: %q", line)
		}
	}
	if rounds != 6 { // a warm-up and two rounds of each client
		t.Errorf("%d rounds printed, want 6:\n%s", rounds, errs)
	}
	if !strings.Contains(errs, "client CPU a record: zbstream ") {
		t.Errorf("the cell's line gives no CPU medians:\n%s", errs)
	}
}

// TestBenchExternalEndpoint points the bench at a server it did not start,
// with the memory engine, two sizes, one record per call only.
func TestBenchExternalEndpoint(t *testing.T) {
	_, ep, stop, err := benchServer("memory")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	code, out, errs := run(t, "-endpoint", ep, "-sizes", "220,1KiB", "-batch", "1", "-duration", "30ms", "-rounds", "2")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	checkTable(t, out, []string{"220 B single", "1 KiB single"})
	if !strings.Contains(out, "engine external "+ep) {
		t.Errorf("the table does not name the external server:\n%s", out)
	}
}

// TestBenchMemoryEngine runs the in-process server on the memory engine.
func TestBenchMemoryEngine(t *testing.T) {
	dir := t.TempDir()
	svgPath := filepath.Join(dir, "b.svg")
	code, out, errs := run(t, "-engine", "memory", "-sizes", "220", "-batch", "20", "-duration", "20ms", "-rounds", "1", "-svg", svgPath)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	checkTable(t, out, []string{"220 B single", "220 B batch 20"})
	checkSVG(t, svgPath, 2)
}

// checkTable checks that the table has exactly the rows named by
// their size and mode, each with seven numbers: each client's records/s
// and MB/s, and the ratio with its min and max.
func checkTable(t *testing.T, out string, want []string) {
	t.Helper()
	_, table, ok := strings.Cut(out, "ratio max\n")
	if !ok {
		t.Fatalf("no table header in:\n%s", out)
	}
	var got []string
	for line := range strings.SplitSeq(table, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "wrote" {
			continue
		}
		if len(f) < 9 {
			t.Errorf("short row %q", line)
			continue
		}
		// records/s and ratios are positive; MB/s of tiny records at a
		// slow rate may round to zero.
		for i, n := range f[len(f)-7:] {
			if x, err := strconv.ParseFloat(n, 64); err != nil || x < 0 || (x == 0 && (i%2 == 0 || i > 3)) {
				t.Errorf("row %q: %q is not a positive number", line, n)
			}
		}
		got = append(got, strings.Join(f[:len(f)-7], " "))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q, want %q\n%s", got, want, out)
	}
}

func checkCSV(t *testing.T, path string, want [][2]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v", err)
	}
	wantHeader := "size_bytes,mode,records_per_call,rounds," +
		"zbstream_records_per_s_median,zbstream_records_per_s_min,zbstream_records_per_s_max,zbstream_mb_per_s_median," +
		"raw_records_per_s_median,raw_records_per_s_min,raw_records_per_s_max,raw_mb_per_s_median," +
		"ratio_median,ratio_min,ratio_max"
	if len(rows) == 0 || strings.Join(rows[0], ",") != wantHeader {
		t.Fatalf("CSV header %q, want %q", rows[:min(len(rows), 1)], wantHeader)
	}
	if len(rows)-1 != len(want) {
		t.Fatalf("CSV has %d rows, want %d: %q", len(rows)-1, len(want), rows)
	}
	for i, r := range rows[1:] {
		if r[0] != want[i][0] || r[1] != want[i][1] {
			t.Errorf("CSV row %d: %q, want size %s mode %s", i+1, r, want[i][0], want[i][1])
		}
		for j, v := range r[3:] {
			// MB/s of tiny records at a slow rate may round to zero.
			if x, err := strconv.ParseFloat(v, 64); err != nil || x < 0 || (x == 0 && j != 4 && j != 8) {
				t.Errorf("CSV row %d: %q is not a positive number", i+1, v)
			}
		}
		size, _ := strconv.ParseFloat(r[0], 64)
		recs, _ := strconv.ParseFloat(r[4], 64)
		mb, _ := strconv.ParseFloat(r[7], 64)
		if d := recs*size/1e6 - mb; d > 0.01 || d < -0.01 {
			t.Errorf("CSV row %d: %v records/s of %v B is not %v MB/s", i+1, recs, size, mb)
		}
	}
}

// checkSVG decodes the chart as XML and counts the bars and their
// whiskers: one per series (zbstream, raw) per cell in each of the two
// panels.
func checkSVG(t *testing.T, path string, cells int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bars := countSVGBars(t, b)
	for _, series := range []string{"bar zbstream", "bar raw", "whisker zbstream", "whisker raw"} {
		if bars[series] != 2*cells {
			t.Errorf("%d %q rects, want %d (2 panels of %d cells)", bars[series], series, 2*cells, cells)
		}
	}
}

func countSVGBars(t *testing.T, b []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	bars := map[string]int{}
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
			if se.Name.Space != "http://www.w3.org/2000/svg" {
				t.Errorf("root namespace %q", se.Name.Space)
			}
		}
		if se.Name.Local == "g" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && strings.HasPrefix(a.Value, "whisker ") {
					bars[a.Value]++
				}
			}
		}
		if se.Name.Local != "rect" {
			continue
		}
		for _, a := range se.Attr {
			if a.Name.Local == "class" && strings.HasPrefix(a.Value, "bar ") {
				bars[a.Value]++
				for _, b := range se.Attr {
					if b.Name.Local == "height" {
						if h, err := strconv.ParseFloat(b.Value, 64); err != nil || h < 0 {
							t.Errorf("bar of height %q", b.Value)
						}
					}
				}
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	return bars
}

// TestBenchSVGEdgeCases draws results the clock can give: a zero rate and
// equal rates, and text that needs escaping.
func TestBenchSVGEdgeCases(t *testing.T) {
	r := result{
		Cells: []cell{{Size: 20, Batch: 1}, {Size: 10240, Batch: 100, ZbRates: []float64{1000}, RawRates: []float64{1000}},
			{Size: 220, Batch: 1, ZbRates: []float64{5, 0}, RawRates: []float64{0, 0}}},
		Date:    time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		Machine: `2 cores (<"A&B">)`, Engine: "external http://x?a=1&b=2", Duration: time.Second, Rounds: 1,
	}
	var b bytes.Buffer
	if err := writeSVG(&b, r); err != nil {
		t.Fatal(err)
	}
	bars := countSVGBars(t, b.Bytes())
	if bars["bar zbstream"] != 6 || bars["bar raw"] != 6 || bars["whisker zbstream"] != 6 || bars["whisker raw"] != 6 {
		t.Errorf("bars and whiskers %v, want 6 of each", bars)
	}
}

// TestBenchBadFlags: every bad flag or value is a usage error (exit 2)
// with a message; -h is help (exit 0).
func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"stray"},
		{"-runs", "3"}, // replaced by -rounds
		{"-rounds", "x"},
		{"-rounds", "1001"},
		{"-duration", "0s"},
		{"-duration", "soon"},
		{"-batch", "0"},
		{"-sizes", ""},
		{"-sizes", "20,abc"},
		{"-sizes", "4"},
		{"-sizes", "-20"},
		{"-sizes", "1MiB", "-batch", "100"},
		{"-engine", "bolt"},
		{"-endpoint", "ftp://x"},
		{"-token", "t"},
		{"-table", "nodots"},
		{"-volume", "12 parsecs"},
		{"-volume", "10"},
		{"-rounds", "0"},
		{"-rss", "-csv", "x.csv"},
		{"-record-size", "20"}, // -rss only
		{"-rss", "-record-size", "7"},
		{"-rss", "-record-size", "20MiB"},
		{"-rss", "-record-size", "200KiB", "-batch", "100"},
		{"-recovery", "-endpoint", "http://127.0.0.1:1"},
	} {
		code, out, errs := run(t, args...)
		if code != cli.ExitUsage {
			t.Errorf("bench %q: exit %d, want %d\n%s%s", args, code, cli.ExitUsage, out, errs)
		}
		if !strings.Contains(errs, "zbstream") || out != "" {
			t.Errorf("bench %q: stdout %q, stderr %q: want a message on stderr only", args, out, errs)
		}
	}
	code, _, errs := run(t, "-h")
	if code != cli.ExitOK || !strings.Contains(errs, "Usage: zbstream bench") || !strings.Contains(errs, "-sizes") {
		t.Errorf("bench -h: exit %d, stderr:\n%s", code, errs)
	}
}

// TestRSSRecord: the -rss records are JSON objects of the size asked for,
// from the smallest record up, numbered where the number fits.
func TestRSSRecord(t *testing.T) {
	numbered := len(`{"seq":12345,"pad":""}`) // the smallest record with the number
	for _, size := range []int{minRecord, 20, numbered - 1, numbered, 1024} {
		rec := rssRecord(12345, size)
		var v map[string]any
		if len(rec) != size || json.Unmarshal(rec, &v) != nil {
			t.Errorf("rssRecord(12345, %d) = %q: %d bytes", size, rec, len(rec))
		}
		if _, seq := v["seq"]; seq != (size >= numbered) {
			t.Errorf("rssRecord(12345, %d) = %q: numbered %v", size, rec, seq)
		}
	}
}

// TestBenchRecovery runs a few rounds of each fault.
func TestBenchRecovery(t *testing.T) {
	code, out, errs := run(t, "-recovery", "-rounds", "3")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, kind := range []string{"close signal:", "dropped connection:"} {
		if !strings.Contains(out, kind) || !strings.Contains(out, "3 rounds") {
			t.Errorf("no %q line with 3 rounds in:\n%s", kind, out)
		}
	}
}

// TestBenchRSSChild runs the -rss child's role in this process (the test
// binary cannot be re-executed as zbstream) at a small volume.
func TestBenchRSSChild(t *testing.T) {
	_, ep, stop, err := benchServer("ackonly")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	t.Setenv(cli.RoleEnv, "bench:rss")
	t.Setenv(cli.RoleConfigEnv, `{"endpoint":"`+ep+`","table":"main.bench.events","volume":1048576,"batch":7}`)
	code, out, errs := run(t)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, `result {"records":1024,"bytes":1048576,`) {
		t.Errorf("no result for 1024 records in:\n%s", out)
	}
	t.Setenv(cli.RoleConfigEnv, `{"endpoint":"`+ep+`","table":"main.bench.events","volume":2000,"batch":1,"size":20}`)
	if code, out, errs := run(t); code != cli.ExitOK || !strings.Contains(out, `result {"records":100,"bytes":2000,`) {
		t.Errorf("20-byte records: exit %d, no result for 100 records in:\n%s%s", code, out, errs)
	}
	t.Setenv(cli.RoleConfigEnv, "{")
	if code, _, errs := run(t); code != cli.ExitFailure || !strings.Contains(errs, cli.RoleConfigEnv) {
		t.Errorf("a bad child config: exit %d, stderr %q", code, errs)
	}
}

func TestBenchStop(t *testing.T) {
	now := time.Now()
	start := now.Add(-1500 * time.Millisecond) // past half the time to the deadlines below
	if !stop(start, now.Add(-time.Millisecond), 10, 0) {
		t.Error("past the deadline: want stop")
	}
	if stop(start, now.Add(time.Second), 100, 0) {
		t.Error("no ack yet, before the deadline: want go on")
	}
	// 1000 acks in 1.5 s; 100 unacked drain in 0.15 s, well before the deadline.
	if stop(start, now.Add(time.Second), 1100, 1000) {
		t.Error("little backlog: want go on")
	}
	// 5000 unacked drain in 7.5 s, after the deadline.
	if !stop(start, now.Add(time.Second), 6000, 1000) {
		t.Error("large backlog: want stop")
	}
	// 100 acks in 0.1 s; 19,900 unacked drain in 19.9 s, after the
	// deadline, but within the first half of the time to it (seconds of
	// margin for a loaded machine): too early to judge by the acks so far.
	if stop(now.Add(-100*time.Millisecond), now.Add(10*time.Second), 20000, 100) {
		t.Error("large backlog within the first half: want go on")
	}
}

// TestBenchInterrupted: Ctrl-C (the context ending) stops a run cleanly,
// with exit 130 and nothing left running (goleak).
func TestBenchInterrupted(t *testing.T) {
	for _, args := range [][]string{{"-sizes", "20", "-duration", "10s"}, {"-recovery", "-rounds", "1000000"}} {
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(300*time.Millisecond, cancel) // as SIGINT does in main
		var out, errb bytes.Buffer
		code := cmds.Run(ctx, append([]string{"bench"}, args...), &out, &errb)
		stop.Stop()
		cancel()
		if code != cli.ExitInterrupted {
			t.Errorf("bench %q interrupted: exit %d, want %d\n%s%s", args, code, cli.ExitInterrupted, out.String(), errb.String())
		}
	}
}
