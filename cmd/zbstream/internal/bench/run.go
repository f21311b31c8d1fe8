package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
	"github.com/zbstream/zbstream/internal/rawclient"
	"github.com/zbstream/zbstream/server"
)

// minRecord is the smallest record: the JSON object {"p":""}.
const minRecord = 8

// benchRecord is a JSON object of exactly size bytes.
func benchRecord(size int) []byte {
	rec := make([]byte, size)
	copy(rec, `{"p":"`)
	for i := 6; i < size-2; i++ {
		rec[i] = 'x'
	}
	copy(rec[size-2:], `"}`)
	return rec
}

// result is a whole table run.
type result struct {
	Cells    []cell
	Date     time.Time
	Machine  string // cores, CPU, OS/arch, Go version
	Engine   string
	Duration time.Duration
	Rounds   int
	Load     string // the 1-minute load average when the run started, or ""
	NoCopy   bool   // the client ran with WithNoCopy
}

// benchMeasure is one measurement: records acknowledged and the time from
// the first send to the last acknowledgement; cpu, when measured, is the
// CPU time the client took meanwhile (proc.CPUTime).
type benchMeasure struct {
	records int64
	elapsed time.Duration
	cpu     time.Duration
}

// cpuPerRecord is the client's CPU time per record, in seconds.
func (m benchMeasure) cpuPerRecord() float64 {
	if m.records <= 0 {
		return 0
	}
	return m.cpu.Seconds() / float64(m.records)
}

// cpuNote is ", X µs of CPU a record" for the -v lines, or "" when the
// CPU time was not measured (a platform without it).
func (m benchMeasure) cpuNote() string {
	if m.cpu <= 0 {
		return ""
	}
	return fmt.Sprintf(", %.2f µs of CPU a record", m.cpuPerRecord()*1e6)
}

func (m benchMeasure) rate() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.records) / m.elapsed.Seconds()
}

// target is where a measurement sends: a running server.
type target struct {
	endpoint string
	token    string
	table    string
	noCopy   bool // the zbstream client keeps records by reference (WithNoCopy)
}

// client is a client of the target's server, with its token.
func (t target) client() (*zbstream.Client, error) {
	var opts []zbstream.Option
	if t.token != "" {
		opts = append(opts, zbstream.WithToken(t.token))
	}
	c, err := zbstream.NewClient(t.endpoint, opts...)
	if err != nil {
		return nil, cli.ClientErr(err, "-ca-file")
	}
	return c, nil
}

// roundName names round r of a cell in the -v lines (-1: the warm-up).
func roundName(r int) string {
	if r < 0 {
		return "warm-up"
	}
	return fmt.Sprintf("round %d", r+1)
}

// benchServer starts the reference server in-process on loopback with the
// named engine and returns its endpoint and a stop function.
func benchServer(engine string) (*server.Server, string, func(), error) {
	e := server.EngineAckOnly
	if engine == "memory" {
		e = server.EngineStore
	}
	srv, err := server.New(server.Options{Engine: e})
	if err != nil {
		return nil, "", nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	stop := func() {
		srv.Stop()
		<-served
	}
	return srv, "http://" + lis.Addr().String(), stop, nil
}

// tableRun measures every cell and prints, and writes, the table.
func tableRun(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	res := result{Date: time.Now().UTC(), Machine: machineLine(), Engine: cfg.engine + " (zbstream serve, a process of its own)", Duration: cfg.duration, Rounds: cfg.rounds, Load: loadAverage(), NoCopy: cfg.noCopy}
	if cfg.endpoint != "" {
		res.Engine = "external " + cfg.endpoint
	}
	modes := []int{1}
	if cfg.batch > 1 {
		modes = append(modes, cfg.batch)
	}
	cells := len(cfg.sizes) * len(modes)
	total := time.Duration(cells*2) * (time.Duration(cfg.rounds)*cfg.duration + max(cfg.duration/4, min(cfg.duration, 100*time.Millisecond)))
	fmt.Fprintf(stderr, "zbstream bench: %d cells x (a warm-up + %d rounds) x 2 clients x %s: about %s\n",
		cells, cfg.rounds, cfg.duration, total.Round(time.Second))
	var logf func(int, bool, benchMeasure, time.Duration)
	if cfg.verbose {
		logf = func(round int, zb bool, m benchMeasure, took time.Duration) {
			name := "raw"
			if zb {
				name = "zbstream"
			}
			fmt.Fprintf(stderr, "    %-8s %-8s %10d records in %7.3fs until the last ack (%7.3fs in all): %.0f records/s%s\n",
				roundName(round), name, m.records, m.elapsed.Seconds(), took.Seconds(), m.rate(), m.cpuNote())
		}
	}
	for _, size := range cfg.sizes {
		for _, batch := range modes {
			measure := func(zb bool, calls int64, d time.Duration) (benchMeasure, error) {
				return benchOne(ctx, cfg, zb, size, batch, calls, d)
			}
			cell, err := measureCell(cell{Size: size, Batch: batch}, cfg.rounds, cfg.duration, measure, logf)
			if err != nil {
				return err
			}
			r := cell.Ratio()
			fmt.Fprintf(stderr, "  %-8s %-10s zbstream %12.0f records/s  raw %12.0f records/s  ratio %.3f (%.3f-%.3f)%s\n",
				sizeLabel(size), cell.Mode(), cell.Zbstream().Median, cell.Raw().Median, r.Median, r.Min, r.Max, cell.cpuNote())
			res.Cells = append(res.Cells, cell)
		}
	}
	writeTable(stdout, res)
	if cfg.csvPath != "" {
		if err := writeFileWith(cfg.csvPath, func(w io.Writer) error { return writeCSV(w, res) }); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", cfg.csvPath)
	}
	if cfg.svgPath != "" {
		if err := writeFileWith(cfg.svgPath, func(w io.Writer) error { return writeSVG(w, res) }); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wrote", cfg.svgPath)
	}
	return nil
}

// benchOne runs one client for one cell and run, calls calls (0: about
// d), against the external server or a fresh one in a process of its own
// (fresh, so that the memory engine's records of earlier runs do not
// weigh on later ones; a process of its own, so that the server's work
// and collections are not the clients').
func benchOne(ctx context.Context, cfg config, zb bool, size, batch int, calls int64, d time.Duration) (benchMeasure, error) {
	t := target{endpoint: cfg.endpoint, token: cfg.token, table: cfg.table, noCopy: cfg.noCopy}
	if t.endpoint == "" {
		srv, err := startServeChild(ctx, cfg.engine)
		if err != nil {
			return benchMeasure{}, err
		}
		defer srv.stop()
		t.endpoint = srv.Endpoint
	}
	runtime.GC() // start each measurement without the last one's garbage
	// The client's CPU time: this process's, from here, so without the
	// server's start (its own process, started above) or the collection.
	return withCPU(func() (benchMeasure, error) {
		if zb {
			return benchZbstream(ctx, t, size, batch, d, calls)
		}
		return raw(ctx, t, size, batch, d, calls)
	})
}

// withCPU runs measure and sets the CPU time this process took meanwhile
// on what it returns (left zero where the platform gives none).
func withCPU(measure func() (benchMeasure, error)) (benchMeasure, error) {
	before, cpuOK := proc.CPUTime()
	m, err := measure()
	if after, ok := proc.CPUTime(); ok && cpuOK {
		m.cpu = after - before
	}
	return m, err
}

// benchZbstream ingests through the zbstream client, on a persistent stream
// with the default options (or WithNoCopy), n calls (or, for n = 0, for about d; see
// stop), then flushes: the measure ends when the last record is
// acknowledged.
func benchZbstream(ctx context.Context, t target, size, batch int, d time.Duration, n int64) (benchMeasure, error) {
	rec := benchRecord(size)
	recs := make([][]byte, batch)
	for i := range recs {
		recs[i] = rec
	}
	return benchRecords(ctx, t, recs, d, n)
}

// benchRecords is benchZbstream with the records of every call given:
// one call, IngestRecord for a single record, IngestBatch otherwise.
func benchRecords(ctx context.Context, t target, recs [][]byte, d time.Duration, n int64) (benchMeasure, error) {
	batch := len(recs)
	c, err := t.client()
	if err != nil {
		return benchMeasure{}, err
	}
	defer c.Close()
	var sopts []zbstream.StreamOption
	if t.noCopy {
		sopts = append(sopts, zbstream.WithNoCopy())
	}
	s, err := c.CreatePersistentStream(ctx, t.table, sopts...)
	if err != nil {
		return benchMeasure{}, cli.ClientErr(err, "-ca-file")
	}
	defer s.Close(ctx) // on an error path: at once if ctx has ended
	var calls int64
	every := checkEvery(batch)
	start := time.Now()
	deadline, hardStop := start.Add(d), start.Add(d+d/4)
	for {
		if batch == 1 {
			_, err = s.IngestRecord(ctx, recs[0])
		} else {
			_, err = s.IngestBatch(ctx, recs)
		}
		if err != nil {
			return benchMeasure{}, cli.ClientErr(err, "-ca-file")
		}
		calls++
		if n > 0 {
			// n calls, unless the machine slows down: then for 1.25 d.
			if calls == n || (calls%every == 0 && !time.Now().Before(hardStop)) {
				break
			}
		} else if calls%every == 0 && stop(start, deadline, calls, s.LastDurable()+1) {
			break
		}
	}
	return drained(ctx, s, start, calls*int64(batch))
}

// drained ends a measure of records sent on s since start once the last
// is acknowledged (Flush), then closes s.
func drained(ctx context.Context, s interface {
	Flush(context.Context) error
	Close(context.Context) error
}, start time.Time, records int64) (benchMeasure, error) {
	if err := s.Flush(ctx); err != nil {
		return benchMeasure{}, cli.ClientErr(err, "-ca-file")
	}
	elapsed := time.Since(start)
	if err := s.Close(ctx); err != nil {
		return benchMeasure{}, cli.ClientErr(err, "-ca-file")
	}
	return benchMeasure{records: records, elapsed: elapsed}, nil
}

// raw is the ceiling: the shared raw gRPC client (internal/rawclient),
// dialed as zbstream dials, sending the same messages with no window, no
// validation and no retry, n calls (or for about d), its acks read on
// another goroutine, until the last one.
func raw(ctx context.Context, t target, size, batch int, d time.Duration, n int64) (benchMeasure, error) {
	st, err := rawclient.Open(ctx, rawclient.Config{Endpoint: t.endpoint, Token: t.token, Table: t.table,
		RequestID: zbstream.NewClientRequestID(), Record: benchRecord(size), Batch: batch})
	if err != nil {
		return benchMeasure{}, rawErr(err)
	}
	defer st.Close()
	st.StartReader()
	every := checkEvery(batch)
	start := time.Now()
	deadline, hardStop := start.Add(d), start.Add(d+d/4)
	for {
		if err := st.Send(); err != nil {
			return benchMeasure{}, rawErr(err)
		}
		calls := st.Sent()
		if n > 0 {
			// n calls, unless the machine slows down: then for 1.25 d.
			if calls == n || (calls%every == 0 && !time.Now().Before(hardStop)) {
				break
			}
		} else if calls%every == 0 && stop(start, deadline, calls, st.Acked()+1) {
			break
		}
	}
	if err := st.WaitAcked(ctx, st.Sent()-1); err != nil {
		if ctx.Err() != nil {
			return benchMeasure{}, ctx.Err()
		}
		return benchMeasure{}, rawErr(err)
	}
	return benchMeasure{records: st.Sent() * int64(batch), elapsed: time.Since(start)}, nil
}

// checkEvery is how many calls a client makes between two looks at the
// clock and the acks.
func checkEvery(batch int) int64 {
	if batch == 1 {
		return 16
	}
	return 1
}

// stop says whether a client should stop sending: when the deadline
// has passed, or when the calls sent but not yet acknowledged would take,
// at the ack rate so far, until the deadline to be acknowledged. So every
// measure lasts about the duration until its last ack, whatever a client
// buffers, and both clients stop by the same rule. The second test waits
// for half the duration: the first acks of a stream are too few to give
// its rate, and a client that buffers more than gRPC's flow control
// (zbstream's window) would stop within milliseconds, its warm-up then
// too short to estimate its rounds' length by.
func stop(start, deadline time.Time, sent, acked int64) bool {
	now := time.Now()
	if !now.Before(deadline) {
		return true
	}
	if acked <= 0 || now.Sub(start) < deadline.Sub(start)/2 {
		return false
	}
	rate := float64(acked) / now.Sub(start).Seconds() // calls per second
	drain := time.Duration(float64(sent-acked) / rate * float64(time.Second))
	return !now.Add(drain).Before(deadline)
}

// rawErr gives an error of the raw stream an exit code.
func rawErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return cli.WithCode(cli.ExitFailure, fmt.Errorf("raw gRPC stream: %w", err))
}

// machineLine describes the machine: cores, CPU model, OS/arch, Go.
func machineLine() string {
	s := fmt.Sprintf("%d cores", runtime.NumCPU())
	if m := cpuModel(); m != "" {
		s += " (" + m + ")"
	}
	return s + fmt.Sprintf(", %s/%s, %s", runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// loadAverage is the 1-minute load average from /proc/loadavg, or "".
func loadAverage() string {
	b, err := readFileLimit("/proc/loadavg", 256)
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
}

// cpuModel is the CPU's model name from /proc/cpuinfo, or "".
func cpuModel() string {
	b, err := readFileLimit("/proc/cpuinfo", 1<<20)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return ""
}
