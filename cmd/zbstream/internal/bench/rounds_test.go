package bench

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewSpread(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{7}, spread{7, 7, 7}},
		{[]float64{3, 1, 2}, spread{2, 1, 3}},
		{[]float64{4, 1, 3, 2}, spread{2.5, 1, 4}},                     // even: the mean of the middle two
		{[]float64{1.0, 0.2, 1.1, 1.05, 1.02}, spread{1.02, 0.2, 1.1}}, // one bad round moves the range, not the median
	} {
		in := slices.Clone(c.in)
		if got := newSpread(c.in); got != c.want {
			t.Errorf("newSpread(%v) = %+v, want %+v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("newSpread reordered its input: %v, was %v", c.in, in)
		}
	}
}

func TestRatiosRoundByRound(t *testing.T) {
	got := ratios([]float64{10, 30, 8}, []float64{5, 0, 8, 99})
	if want := []float64{2, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("ratios = %v, want %v", got, want)
	}
	// The ratio of a cell is the median of the rounds' ratios, not the
	// ratio of the medians (2/2 = 1 here).
	c := cell{Size: 10, Batch: 1, ZbRates: []float64{1, 2, 4}, RawRates: []float64{2, 4, 1}}
	if r := c.Ratio(); r != (spread{0.5, 0.5, 4}) {
		t.Errorf("Ratio = %+v, want median 0.5, min 0.5, max 4", r)
	}
}

// TestMeasureCellInterleaves runs measureCell with a fake measurement:
// the clients alternate, the first changing every round (ABBA), the warm-up
// is timed and not counted, later rounds make the calls the best rate so
// far makes in the duration, and each client's rates are kept in order.
func TestMeasureCellInterleaves(t *testing.T) {
	var order []string
	rates := map[bool][]float64{true: {100, 110, 90, 120}, false: {200, 100, 180, 190}} // warm-up first
	measure := func(zb bool, calls int64, d time.Duration) (benchMeasure, error) {
		name := map[bool]string{true: "zb", false: "raw"}[zb]
		order = append(order, fmt.Sprintf("%s:%d:%s", name, calls, d))
		r := rates[zb][0]
		rates[zb] = rates[zb][1:]
		return benchMeasure{records: int64(r), elapsed: time.Second}, nil
	}
	var logged []int
	cell, err := measureCell(cell{Size: 20, Batch: 10}, 3, 2*time.Second, measure,
		func(round int, _ bool, _ benchMeasure, _ time.Duration) { logged = append(logged, round) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"raw:0:500ms", "zb:0:500ms", // warm-up: a quarter of the duration, stopped by the clock
		"zb:20:2s", "raw:40:2s", // 100 and 200 records/s x 2 s / 10 per call
		"raw:40:2s", "zb:22:2s", // the best rate so far: 200 for raw, 110 for zbstream
		"zb:22:2s", "raw:40:2s",
	}
	if !slices.Equal(order, want) {
		t.Errorf("order\n%q\nwant\n%q", order, want)
	}
	if !slices.Equal(cell.ZbRates, []float64{110, 90, 120}) || !slices.Equal(cell.RawRates, []float64{100, 180, 190}) {
		t.Errorf("rates zb %v raw %v", cell.ZbRates, cell.RawRates)
	}
	if !slices.Equal(logged, []int{-1, -1, 0, 0, 1, 1, 2, 2}) {
		t.Errorf("logged rounds %v", logged)
	}
	if z := cell.Zbstream(); z != (spread{110, 90, 120}) {
		t.Errorf("Zbstream() = %+v", z)
	}
	// Round by round: 110/100, 90/180, 120/190.
	if r := cell.Ratio(); r.Median != 120.0/190 || r.Min != 90.0/180 || r.Max != 110.0/100 {
		t.Errorf("Ratio() = %+v, want median 120/190, min 0.5, max 1.1", r)
	}
}

func TestMeasureCellStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	_, err := measureCell(cell{Size: 20, Batch: 1}, 5, time.Second, func(bool, int64, time.Duration) (benchMeasure, error) {
		n++
		if n == 3 {
			return benchMeasure{}, boom
		}
		return benchMeasure{records: 1, elapsed: time.Second}, nil
	}, nil)
	if !errors.Is(err, boom) || n != 3 {
		t.Errorf("err %v after %d measurements, want boom after 3", err, n)
	}
}

// resultFixture is a result with known rounds.
func resultFixture() result {
	return result{
		Cells: []cell{
			{Size: 1000, Batch: 1, ZbRates: []float64{1000, 1200, 900}, RawRates: []float64{1000, 1000, 1000}},
			{Size: 20, Batch: 100, ZbRates: []float64{5e5, 4e5}, RawRates: []float64{4e5, 5e5}},
		},
		Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Machine: "2 cores", Engine: "ackonly",
		Duration: time.Second, Rounds: 3, Load: "1.50",
	}
}

func TestBenchTableFormat(t *testing.T) {
	var b bytes.Buffer
	writeTable(&b, resultFixture())
	out := b.String()
	for _, want := range []string{
		"3 interleaved rounds of 1s per client and cell",
		"ratio: the median of the rounds'\nzbstream/raw ratios, with their spread: min and max over the rounds",
		"size  mode  zbstream records/s  zbstream MB/s  raw records/s  raw MB/s  ratio  ratio min  ratio max",
		"1000 B  single  1000  1  1000  1  1.000  0.900  1.200",
		"20 B  batch 100  450000  9  450000  9  1.025  0.800  1.250",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

func TestBenchCSVFormat(t *testing.T) {
	var b bytes.Buffer
	if err := writeCSV(&b, resultFixture()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"1000,single,1,3,1000,900,1200,1.000,1000,1000,1000,1.000,1.0000,0.9000,1.2000",
		"20,batch 100,100,2,450000,400000,500000,9.000,450000,400000,500000,9.000,1.0250,0.8000,1.2500",
	}
	if len(lines) != 3 || !slices.Equal(lines[1:], want) {
		t.Errorf("CSV rows\n%s\nwant\n%s", strings.Join(lines[1:], "\n"), strings.Join(want, "\n"))
	}
}

// TestBenchSVGSpread checks that the chart labels each group with the
// median ratio and its range.
func TestBenchSVGSpread(t *testing.T) {
	var b bytes.Buffer
	if err := writeSVG(&b, resultFixture()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">1.00×<", ">0.90–1.20<", ">1.02×<", ">0.80–1.25<", "median of 3 interleaved rounds", "rounds 900 to 1.20k"} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("the SVG has no %q", want)
		}
	}
	bars := countSVGBars(t, b.Bytes())
	if bars["whisker zbstream"] != 4 || bars["whisker raw"] != 4 {
		t.Errorf("whiskers %v, want 4 of each (2 panels of 2 cells)", bars)
	}
}
