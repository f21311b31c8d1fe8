package ingest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// isTerminal reports whether w is a character device (a terminal), which
// is what decides between a redrawn progress bar and plain lines. It needs
// no dependency; /dev/null also counts, and gets the bar, harmlessly.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// tracker turns the stream's durable offset into a count of durable
// records: it remembers, for every call in flight, the number of records
// up to and including it, and where its records are in the file.
type tracker struct {
	mu      sync.Mutex
	marks   []mark // calls sent, not yet known durable, in offset order
	durable mark   // the last call known durable (offset -1: none)
}

// mark is call offset: its records are first to last in the file, and
// records counts the records up to and including them.
type mark struct {
	offset, records int64
	first, last     place
}

// sent notes that call m was sent.
func (t *tracker) sent(m mark) {
	t.mu.Lock()
	t.marks = append(t.marks, m)
	t.mu.Unlock()
}

// update learns that every offset up to w is durable and returns the
// number of durable records.
func (t *tracker) update(w int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.updateLocked(w)
	return t.durable.records
}

func (t *tracker) updateLocked(w int64) {
	i := 0
	for i < len(t.marks) && t.marks[i].offset <= w {
		t.durable = t.marks[i]
		i++
	}
	if i > 0 {
		n := copy(t.marks, t.marks[i:])
		t.marks = t.marks[:n]
	}
}

// around returns the last call durable once offsets up to w are, and the
// call after it if it was sent (nil otherwise).
func (t *tracker) around(w int64) (mark, *mark) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.updateLocked(w)
	if len(t.marks) > 0 && t.marks[0].offset == t.durable.offset+1 {
		next := t.marks[0]
		return t.durable, &next
	}
	return t.durable, nil
}

// progress reports ingestion: a bar redrawn in place on a terminal, plain
// lines every interval otherwise.
type progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration
	total    int64
	base     int64 // records durable before this run
	start    time.Time
	durable  func() int64
	unit     string // what is counted: "record", "row"

	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	drew bool // a bar is on the line
}

func newProgress(w io.Writer, tty bool, interval time.Duration, total, base int64, durable func() int64, unit string) *progress {
	p := &progress{w: w, tty: tty, interval: interval, total: total, base: base, durable: durable, unit: unit,
		start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	if tty && interval > 0 {
		p.interval = 200 * time.Millisecond
	}
	if p.interval <= 0 {
		close(p.done)
		return p
	}
	go p.run()
	return p
}

func (p *progress) run() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.report()
		}
	}
}

func (p *progress) report() {
	n := p.durable()
	el := time.Since(p.start)
	rate := float64(n-p.base) / el.Seconds()
	eta := "?"
	if rate > 0 {
		eta = fmtDuration(time.Duration(float64(p.total-n) / rate * float64(time.Second)))
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(n) / float64(p.total)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		const width = 30
		fill := int(pct / 100 * width)
		bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
		if fill > 0 && fill < width {
			bar = strings.Repeat("=", fill-1) + ">" + strings.Repeat(" ", width-fill)
		}
		fmt.Fprintf(p.w, "\r\033[K[%s] %5.1f%% %d/%s  %s %s/s  ETA %s", bar, pct, n, plural(p.total, p.unit), fmtRate(rate), p.rateUnit(), eta)
		p.drew = true
		return
	}
	fmt.Fprintf(p.w, "ingest: %d/%s durable (%.1f%%), %s %s/s, ETA %s\n", n, plural(p.total, p.unit), pct, fmtRate(rate), p.rateUnit(), eta)
}

// rateUnit is the unit of the rate shown: "rec" for records, as it
// always was, the unit itself otherwise.
func (p *progress) rateUnit() string {
	if p.unit == "record" {
		return "rec"
	}
	return p.unit + "s"
}

// end stops the reports and clears the bar.
func (p *progress) end() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
	default:
		close(p.stop)
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drew {
		fmt.Fprint(p.w, "\r\033[K")
		p.drew = false
	}
}

func fmtRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// plural says n things: "1 record", "2 records", "0 calls".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
