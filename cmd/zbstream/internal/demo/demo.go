package demo

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
)

// demoTable is the table the demo writes.
const demoTable = "main.demo.events"

// config is the demo's configuration, handed to its child processes as
// JSON in the environment.
type config struct {
	Records    int    `json:"records"`
	RecordSize int    `json:"record_size"`
	Batch      int    `json:"batch"`
	Seed       uint64 `json:"seed"`
	FaultEvery int    `json:"fault_every"`
	KillServer int    `json:"kill_server"`
	KillClient int    `json:"kill_client"`
	Ephemeral  bool   `json:"ephemeral"`
	// -spool mode (demo_spool*.go): the client writes through a spool in
	// DataDir/client-spool, and a new client process never replays the
	// source.
	Spool      bool `json:"spool"`
	Goroutines int  `json:"goroutines"`

	Addr     string `json:"addr"`
	DataDir  string `json:"data_dir"`
	Token    string `json:"token"`
	StreamID string `json:"stream_id"`
	StartAt  int    `json:"start_at"`
}

func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var child config
	switch role, err := cli.Role("demo", &child); {
	case err != nil:
		return err
	case role == "server", role == "client":
		return demoChild(ctx, role, child, stdout)
	}
	fs, a := flags(stderr)
	if err := cli.Parse(fs, args, false); err != nil {
		return err
	}
	cfg := a.cfg
	switch {
	case cfg.Records <= 0:
		return cli.UsageErr("-records must be positive")
	case a.recordSize < 32 || a.recordSize > 1<<20:
		return cli.UsageErr("-record-size must be between 32 and 1048576")
	case cfg.Batch <= 0 || cfg.Batch > 10_000:
		return cli.UsageErr("-batch must be between 1 and 10000")
	case cfg.FaultEvery < 0 || cfg.KillServer < 0 || cfg.KillClient < 0:
		return cli.UsageErr("-fault-every, -kill-server and -kill-client must not be negative")
	case cfg.Spool && (cfg.Ephemeral || cfg.Goroutines < 1 || cfg.Goroutines > 256):
		return cli.UsageErr("-spool takes persistent streams and 1 to 256 -goroutines")
	}
	cfg.RecordSize = int(a.recordSize)
	dir, err := os.MkdirTemp("", "zbstream-demo-")
	if err != nil {
		return err
	}
	if a.keep {
		fmt.Fprintln(stdout, "data directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	cfg.DataDir = dir
	cfg.Token = randomHex(16)
	if cfg.Addr, err = freeLoopbackAddr(); err != nil {
		return err
	}
	d := &demo{cfg: cfg, out: stdout, start: time.Now(), faults: map[string]int{}}
	return d.run(ctx)
}

// demoArgs is what the demo's flags say: the configuration, but for
// RecordSize, set from recordSize (-record-size) once it is checked; and
// -keep.
type demoArgs struct {
	cfg        config
	recordSize int64
	keep       bool
}

// flags defines the demo's flags on a new flag set that fills a.
func flags(stderr io.Writer) (fs *flag.FlagSet, a *demoArgs) {
	fs = cli.NewFlags("demo", "demo [flags]\n\nRuns the reference server (bolt engine, strict duplicates) and an ingesting client\n"+
		"as separate processes, injects faults, kills both with SIGKILL, resumes, and verifies\n"+
		"that every record landed exactly once (duplicates 0, lost 0).", stderr)
	a = new(demoArgs)
	cfg := &a.cfg
	fs.IntVar(&cfg.Records, "records", 1_200_000, "source records to ingest (the default takes 10 to 30 s on 2 cores)")
	cli.ByteSizeVar(fs, &a.recordSize, "record-size", 200, "`bytes` per record (JSON; e.g. 1KiB; "+cli.SizeUnits+")")
	fs.IntVar(&cfg.Batch, "batch", 20, "records per ingest call")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the fault schedule")
	fs.IntVar(&cfg.FaultEvery, "fault-every", 150, "about this many calls between server faults (drop, commit-then-drop, close signal); 0: none")
	fs.IntVar(&cfg.KillServer, "kill-server", 1, "times the server process is killed with SIGKILL and restarted")
	fs.IntVar(&cfg.KillClient, "kill-client", 1, "times the client process is killed with SIGKILL and a new one resumes")
	fs.BoolVar(&cfg.Ephemeral, "ephemeral", false, "use ephemeral streams (at-least-once): duplicates are counted, none lost")
	fs.BoolVar(&cfg.Spool, "spool", false, "ingest through a client-side spool (package spool): a killed client is not replayed from the source; verified over the calls that returned")
	fs.IntVar(&cfg.Goroutines, "goroutines", 4, "with -spool: goroutines ingesting concurrently (they share the spool's fsyncs)")
	fs.BoolVar(&a.keep, "keep", false, "keep the server's data directory and print where it is")
	return fs, a
}

// demoChild runs one of the demo's child processes, in role with cfg
// (cli.RoleCommand started it).
func demoChild(ctx context.Context, role string, cfg config, stdout io.Writer) error {
	// Its peak RSS comes last, once everything it used is released
	// (demo_rss.go).
	defer reportPeakRSS(stdout)
	if role == "server" {
		return demoServer(ctx, cfg, stdout)
	}
	if cfg.Spool {
		return spoolClient(ctx, cfg, stdout) // demo_spool_client.go
	}
	return client(ctx, cfg, stdout)
}

// demo orchestrates the processes and keeps the score.
type demo struct {
	cfg   config
	out   io.Writer
	start time.Time

	mu       sync.Mutex
	faults   map[string]int // by kind, server faults and kills
	statuses []status       // the last status of each client process
	server   *child
	children []*child // every process started, for their peak RSS
}

func (d *demo) run(ctx context.Context) error {
	if d.cfg.Spool {
		return d.runSpool(ctx) // demo_spool.go
	}
	kind := "persistent"
	if d.cfg.Ephemeral {
		kind = "ephemeral"
	}
	fmt.Fprintf(d.out, "zbstream demo: %d records of %d B in calls of %d, %s streams, faults about every %d calls, %d server kill(s), %d client kill(s)\n",
		d.cfg.Records, d.cfg.RecordSize, d.cfg.Batch, kind, d.cfg.FaultEvery, d.cfg.KillServer, d.cfg.KillClient)
	if err := d.startServer(ctx); err != nil {
		return err
	}
	defer func() { d.server.abandon() }()
	fmt.Fprintf(d.out, "server: %s (bolt engine in %s, strict duplicates on)\n", d.cfg.Addr, d.cfg.DataDir)

	if !d.cfg.Ephemeral {
		id, err := d.createStream(ctx)
		if err != nil {
			return err
		}
		d.cfg.StreamID = id
		fmt.Fprintf(d.out, "created persistent stream %s\n", id)
	}

	stopProgress := d.progress()
	defer stopProgress()
	serverKills, clientKills := 0, 0
	for {
		done, err := d.runClient(ctx, &serverKills, &clientKills)
		if err != nil {
			return err
		}
		if done {
			break
		}
		d.count("client SIGKILL")
		last := d.lastStatus()
		fmt.Fprintf(d.out, "  client process killed with SIGKILL at %d durable records; a new process resumes\n", last.Durable)
		d.cfg.StartAt = last.Durable // ephemeral: replay from what this process knew was durable
	}
	stopProgress()
	elapsed := time.Since(d.start)
	if err := d.server.stop(); err != nil {
		return fmt.Errorf("stopping the server: %w", err)
	}
	var p readProgress
	stopVerify := d.verifyProgress(&p)
	v, err := verify(ctx, d.cfg, &p)
	stopVerify()
	if err != nil {
		return err
	}
	return d.summary(v, elapsed)
}

// runClient runs one client process until it finishes (true) or is killed
// on plan (false), killing and restarting the server on plan meanwhile.
func (d *demo) runClient(ctx context.Context, serverKills, clientKills *int) (bool, error) {
	c, err := d.spawn(ctx, "client")
	if err != nil {
		return false, err
	}
	defer c.abandon()
	d.mu.Lock()
	d.statuses = append(d.statuses, status{Durable: d.cfg.StartAt})
	d.mu.Unlock()
	// Kills are spread over the run: the server's over the first 60% of
	// the records, the client's from 15% to 75%.
	killServerAt := int(float64(d.cfg.Records) * 0.6 * float64(*serverKills+1) / float64(d.cfg.KillServer+1))
	killClientAt := int(float64(d.cfg.Records) * (0.15 + 0.6*float64(*clientKills+1)/float64(d.cfg.KillClient+1)))
	for line := range c.lines {
		if rest, ok := strings.CutPrefix(line, "status "); ok {
			var st status
			if err := json.Unmarshal([]byte(rest), &st); err != nil {
				return false, fmt.Errorf("client status %q: %w", rest, err)
			}
			d.setStatus(st)
			if *serverKills < d.cfg.KillServer && st.Durable >= killServerAt {
				*serverKills++
				if err := d.restartServer(ctx); err != nil {
					return false, err
				}
			}
			if *clientKills < d.cfg.KillClient && st.Durable >= killClientAt {
				*clientKills++
				c.abandon()
				return false, nil
			}
		}
		if line == "done" {
			return true, c.wait()
		}
	}
	if err := c.wait(); err != nil {
		return false, fmt.Errorf("client process: %w\n%s", err, c.stderr.String())
	}
	return false, errors.New("client process ended without finishing")
}

func (d *demo) startServer(ctx context.Context) error {
	s, err := d.spawn(ctx, "server")
	if err != nil {
		return err
	}
	for line := range s.lines {
		if strings.HasPrefix(line, "listening ") {
			break
		}
	}
	d.server = s
	go func() {
		for line := range s.lines {
			if kind, ok := strings.CutPrefix(line, "fault "); ok {
				d.count(kind)
			}
		}
	}()
	return nil
}

func (d *demo) restartServer(ctx context.Context) error {
	d.server.kill() // its lines are read to the end by startServer's reader
	d.count("server SIGKILL")
	fmt.Fprintln(d.out, "  server process killed with SIGKILL; restarting it on the same data")
	time.Sleep(200 * time.Millisecond) // the client notices the server is gone
	return d.startServer(ctx)
}

// createStream creates the demo's persistent stream, as an application
// does once, and keeps its id.
func (d *demo) createStream(ctx context.Context) (string, error) {
	c, err := zbstream.NewClient("http://"+d.cfg.Addr, zbstream.WithToken(d.cfg.Token))
	if err != nil {
		return "", err
	}
	defer c.Close()
	s, err := c.CreatePersistentStream(ctx, demoTable)
	if err != nil {
		return "", cli.ClientErr(err, "-ca-file")
	}
	return s.StreamID(), s.Close(ctx)
}

func (d *demo) count(kind string) {
	d.mu.Lock()
	d.faults[kind]++
	d.mu.Unlock()
}

// setStatus records the latest status of the current client process.
func (d *demo) setStatus(st status) {
	d.mu.Lock()
	d.statuses[len(d.statuses)-1] = st
	d.mu.Unlock()
}

func (d *demo) lastStatus() status {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.statuses) == 0 {
		return status{}
	}
	return d.statuses[len(d.statuses)-1]
}

// progress prints a progress line every second until stopped.
func (d *demo) progress() func() {
	return cli.Every(time.Second, func() {
		st := d.lastStatus()
		d.progressLine("durable", st.Durable)
	})
}

// progressLine prints one progress line: n of the source's records are
// what (durable, returned).
func (d *demo) progressLine(what string, n int) {
	el := time.Since(d.start)
	fmt.Fprintf(d.out, "  %5.1fs  %s %d/%d  %.0f records/s  faults: %s\n",
		el.Seconds(), what, n, d.cfg.Records, float64(n)/el.Seconds(), d.faultLine())
}

func (d *demo) faultLine() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.faults) == 0 {
		return "none yet"
	}
	return formatCounts(d.faults)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// freeLoopbackAddr returns a loopback address with a port free right now:
// the server is restarted on the same address, so the client finds it.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// child is one of the demo's processes: the same binary, in a role.
type child struct {
	role   string
	cmd    *exec.Cmd
	lines  chan string
	stderr *strings.Builder
	once   sync.Once
	waited chan error
	peak   atomic.Int64 // peak RSS in bytes, 0 until known (demo_rss.go)
	reaped atomic.Bool  // waited for: its pid may belong to another process
}

func (d *demo) spawn(ctx context.Context, role string) (*child, error) {
	cmd, err := cli.RoleCommand(context.Background(), "demo", role, d.cfg)
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &child{role: role, cmd: cmd, lines: make(chan string, 64), stderr: &strings.Builder{}, waited: make(chan error, 1)}
	cmd.Stderr = &proc.LockedWriter{W: c.stderr}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.children = append(d.children, c)
	d.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			// The peak RSS line is the child's last; it is kept here, so
			// that it is in once wait returns, whoever reads the lines.
			if rest, ok := strings.CutPrefix(sc.Text(), peakRSSPrefix); ok {
				if n, err := strconv.ParseInt(rest, 10, 64); err == nil {
					c.notePeak(n)
				}
				continue
			}
			c.lines <- sc.Text()
		}
		close(c.lines)
		err := cmd.Wait()
		c.reaped.Store(true)
		c.waited <- err
	}()
	go func() {
		<-ctx.Done()
		c.abandon()
	}()
	return c, nil
}

// kill ends the process with SIGKILL (once). Whoever reads its lines goes
// on reading them: the lines it wrote before it died are still to come.
// Its peak RSS is read first: after SIGKILL it reports nothing.
func (c *child) kill() {
	c.once.Do(func() {
		if !c.reaped.Load() {
			if peak, ok := proc.VmHWM(strconv.Itoa(c.cmd.Process.Pid)); ok {
				c.notePeak(peak)
			}
		}
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	})
}

// abandon kills the process and discards whatever lines it has left, for a
// caller that reads no more of them (so that the process is reaped).
func (c *child) abandon() {
	c.kill()
	go func() {
		for range c.lines {
		}
	}()
}

// stop ends the process with SIGTERM and waits for it.
func (c *child) stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	go func() {
		for range c.lines {
		}
	}()
	return <-c.waited
}

func (c *child) wait() error { return <-c.waited }
