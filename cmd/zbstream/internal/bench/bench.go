package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	"github.com/zbstream/zbstream/record"
)

// table is the table the bench writes (the ack-only engine stores
// nothing).
const table = "main.bench.events"

// config is the bench's configuration.
type config struct {
	sizes    []int
	batch    int
	duration time.Duration
	endpoint string // external server; "" starts one (a process of its own, or in-process for -rss and -recovery)
	engine   string // of the server started: "ackonly" or "memory"
	token    string
	table    string
	noCopy   bool // the zbstream client runs with WithNoCopy
	csvPath  string
	svgPath  string
	verbose  bool

	rss      bool
	volume   int64
	ackDelay time.Duration // -rss: the server holds every ack back this long
	rssSize  int64         // -rss: bytes of each record
	recovery bool
	// rounds: of the table, interleaved rounds per cell; of -recovery,
	// faults of each kind.
	rounds int
	format string // "json" (the table) or "arrow" (Arrow beside JSON)
}

// Defaults of -rounds, which counts different things in the two modes.
const (
	defaultRounds         = 5
	recoveryDefaultRounds = 200
)

const synopsis = `bench [flags]

Measures the zbstream client (a persistent stream, until the last record is
acknowledged) beside a raw gRPC bidi stream sending the same protobuf messages
with no client logic (the ceiling), in the same run, against "zbstream serve
-engine ackonly" started afresh for each run as a process of its own on
loopback (or -endpoint). For each
record size, one record per call and in batches, the two clients run -rounds
rounds of -duration each, interleaved (the first alternating), and the table
gives each client's median round and the median of the rounds' ratios with its
spread (min and max). Prints a table; -csv and -svg write it. Each cell's
line on stderr gives both clients' median CPU time per record (this process's
user and system time during each measure, its connection and stream included;
the server's is not in it), and -v prints every round with it.

-rss instead ingests -volume of 1 KiB records (or -record-size) through a 64 MiB
in-flight bound in a child process and reports its peak RSS, and its growth over
what it held before it opened the stream (with -ack-delay, the server holds every
ack back, as a distant or slow one would, so that the in-flight bound is reached);
-recovery instead measures the time until acks flow again after a close signal
and after a dropped connection.

-format arrow instead measures the same rows sent as JSON lines (a persistent
stream, -batch records a call) and as Arrow record batches (an Arrow Flight
stream, -batch rows a batch), interleaved as above, against "zbstream serve
-engine ackonly" started as a process of its own (or -endpoint), and gives
each path's rows/s and the client's CPU time per row (this process's user and
system time during each round; the server's is not in it).

Flags:`

func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var child rssConfig
	switch role, err := cli.Role("bench", &child); {
	case err != nil:
		return err
	case role == "rss":
		return rssChild(ctx, child, stdout)
	}
	fs, cfg := flags(stderr)
	if err := cli.Parse(fs, args, false); err != nil {
		return err
	}
	if !flagWasSet(fs, "rounds") {
		cfg.rounds = defaultRounds
		if cfg.recovery {
			cfg.rounds = recoveryDefaultRounds
		}
	}
	if err := cfg.checkFormat(fs); err != nil {
		fs.Usage()
		return err
	}
	if err := cfg.check(); err != nil {
		fs.Usage()
		return err
	}
	err := measurements(ctx, *cfg, stdout, stderr)
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // interrupted: exit 130, whatever failed on the way
	}
	return err
}

// flags defines the bench's flags on a new flag set; parsing it fills
// the configuration (but for -rounds' default, which depends on -recovery).
func flags(stderr io.Writer) (*flag.FlagSet, *config) {
	fs := cli.NewFlags("bench", synopsis, stderr)
	cfg := &config{sizes: []int{20, 220, 750, 10 << 10}}
	fs.Var(sizesFlag{&cfg.sizes}, "sizes", "comma-separated record `sizes` in bytes (e.g. 220,10KiB; "+cli.SizeUnits+")")
	fs.IntVar(&cfg.batch, "batch", 100, "records per call of the batched mode, and of -rss (1: one record per call only); with -format arrow, rows per call of both paths")
	fs.DurationVar(&cfg.duration, "duration", 1500*time.Millisecond, "how long each client sends in each cell and run")
	fs.StringVar(&cfg.endpoint, "endpoint", "", "an external server (http://host:port or https://host:port) instead of one started on loopback")
	fs.StringVar(&cfg.engine, "engine", "ackonly", "engine of the server started on loopback: ackonly or memory")
	fs.StringVar(&cfg.token, "token", "", "bearer token for -endpoint")
	fs.StringVar(&cfg.table, "table", table, "table to write (catalog.schema.table)")
	fs.StringVar(&cfg.csvPath, "csv", "", "write the table as CSV to this file")
	fs.StringVar(&cfg.svgPath, "svg", "", "write the table as an SVG chart to this file")
	fs.BoolVar(&cfg.noCopy, "nocopy", false, "run the zbstream client with WithNoCopy (records kept by reference, not copied)")
	fs.BoolVar(&cfg.verbose, "v", false, "print every measurement to stderr")
	fs.BoolVar(&cfg.rss, "rss", false, "measure the peak RSS of a child process ingesting -volume of -record-size records (64 MiB in-flight bound)")
	cli.ByteSizeVar(fs, &cfg.volume, "volume", 4<<30, "`bytes` ingested by -rss (e.g. 4GiB; "+cli.SizeUnits+")")
	fs.DurationVar(&cfg.ackDelay, "ack-delay", 0, "with -rss: the server holds every ack back this long (0: acks at once)")
	cli.ByteSizeVar(fs, &cfg.rssSize, "record-size", rssRecordSize, "with -rss: `bytes` of each record (e.g. 20; "+cli.SizeUnits+")")
	fs.BoolVar(&cfg.recovery, "recovery", false, "measure the time until acks flow again after a close signal and after a dropped connection")
	fs.StringVar(&cfg.format, "format", "json", "json: the table of the zbstream client beside raw gRPC; arrow: the same rows as Arrow batches beside JSON lines")
	fs.IntVar(&cfg.rounds, "rounds", 0, fmt.Sprintf("interleaved rounds per cell of the table, the median reported (default %d); with -recovery, faults of each kind injected (default %d)", defaultRounds, recoveryDefaultRounds))
	return fs, cfg
}

func measurements(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	if cfg.format == "arrow" {
		return arrowTable(ctx, cfg, stdout, stderr)
	}
	if !cfg.rss && !cfg.recovery {
		return tableRun(ctx, cfg, stdout, stderr)
	}
	if cfg.rss {
		if err := rss(ctx, cfg, stdout, stderr); err != nil {
			return err
		}
	}
	if cfg.recovery {
		return recovery(ctx, cfg, stdout, stderr)
	}
	return nil
}

func (c *config) check() error {
	switch {
	case len(c.sizes) == 0:
		return cli.UsageErr("-sizes: no size given")
	case c.batch < 1 || c.batch > 100_000:
		return cli.UsageErr("-batch must be between 1 and 100000")
	case c.duration <= 0 || c.duration > time.Hour:
		return cli.UsageErr("-duration must be positive and at most 1h")
	case !c.recovery && (c.rounds < 1 || c.rounds > 1000):
		return cli.UsageErr("-rounds must be between 1 and 1000")
	case c.engine != "ackonly" && c.engine != "memory":
		return cli.UsageErr("-engine must be ackonly or memory, not %q", c.engine)
	case c.volume < 1<<10:
		return cli.UsageErr("-volume must be at least 1 KiB")
	case c.rounds < 1 || c.rounds > 1_000_000:
		return cli.UsageErr("-rounds must be between 1 and 1000000")
	case c.token != "" && c.endpoint == "":
		return cli.UsageErr("-token needs -endpoint (the server started here is in open mode)")
	case c.ackDelay < 0 || c.ackDelay > time.Minute:
		return cli.UsageErr("-ack-delay must be between 0 and 1m")
	case c.noCopy && (c.rss || c.recovery):
		return cli.UsageErr("-nocopy applies to the throughput table only")
	case c.ackDelay > 0 && !c.rss:
		return cli.UsageErr("-ack-delay applies to -rss only")
	case c.rssSize != rssRecordSize && !c.rss:
		return cli.UsageErr("-record-size applies to -rss only (the table's sizes are -sizes)")
	case (c.rss || c.recovery) && c.endpoint != "":
		return cli.UsageErr("-rss and -recovery use the in-process server: drop -endpoint")
	case (c.rss || c.recovery) && (c.csvPath != "" || c.svgPath != ""):
		return cli.UsageErr("-csv and -svg write the throughput table, not -rss or -recovery")
	}
	if err := record.CheckTable(c.table); err != nil {
		return cli.UsageErr("-table: %v", err)
	}
	if c.endpoint != "" {
		if _, err := grpcio.ParseEndpoint(c.endpoint); err != nil {
			return cli.UsageErr("-endpoint: %v", err)
		}
	}
	if c.format == "arrow" { // rows of its own, whatever -sizes says; arrowTable checks the call limit
		return nil
	}
	if c.rss { // -rss sends records of -record-size, whatever -sizes says
		if c.rssSize < minRecord || c.rssSize > core.DefaultMaxCallBytes {
			return cli.UsageErr("-record-size: %d B is not between the smallest record, %d B, and the call limit, %d B", c.rssSize, minRecord, core.DefaultMaxCallBytes)
		}
		if b := int64(c.batch) * (c.rssSize + 5); b > core.DefaultMaxCallBytes {
			return cli.UsageErr("-batch: a batch of %d records of %d B is %d B, over the %d-byte call limit", c.batch, c.rssSize, b, core.DefaultMaxCallBytes)
		}
		return nil
	}
	for _, s := range c.sizes {
		if s < minRecord {
			return cli.UsageErr("-sizes: %d B is below the smallest record, %d B", s, minRecord)
		}
		if b := int64(c.batch) * int64(s+5); b > core.DefaultMaxCallBytes {
			return cli.UsageErr("-sizes and -batch: a batch of %d records of %d B is %d B, over the %d-byte call limit", c.batch, s, b, core.DefaultMaxCallBytes)
		}
	}
	return nil
}

// flagWasSet reports whether the command line set the flag name.
func flagWasSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// sizesFlag is a comma-separated list of byte sizes (cli.ParseByteSize),
// each at most 1 GiB.
type sizesFlag struct{ p *[]int }

func (f sizesFlag) String() string {
	if f.p == nil {
		return ""
	}
	s := make([]string, len(*f.p))
	for i, n := range *f.p {
		s[i] = cli.FormatByteSize(int64(n))
	}
	return strings.Join(s, ",")
}

func (f sizesFlag) Set(v string) error {
	var out []int
	for part := range strings.SplitSeq(v, ",") {
		n, err := cli.ParseByteSize(part)
		if err != nil {
			return fmt.Errorf("%q: %w", part, err)
		}
		if n > 1<<30 {
			return fmt.Errorf("%q is too large", part)
		}
		out = append(out, int(n))
	}
	*f.p = out
	return nil
}

// formatBytes writes n with a 1024-based unit when it is a whole multiple.
func formatBytes(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return fmt.Sprintf("%d %s", n/u.m, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// sizeLabel is a record size as the table and chart show it: "20 B",
// "10 KiB".
func sizeLabel(n int) string { return formatBytes(int64(n)) }

var _ flag.Value = sizesFlag{}
