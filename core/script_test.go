package core_test

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
)

var rewrite = flag.Bool("rewrite", false, "rewrite core/testdata/*.txt with the actual output")

// TestScripts runs the golden scenario scripts in testdata. Each script is a
// list of commands ("> cmd args") each followed by the output it must
// produce; comments (#) and blank lines separate them. Run with -rewrite to
// record the actual output after a deliberate change, then read the diff.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScript(t, file)
		})
	}
}

// scriptBlock is one command of a script with what surrounds it.
type scriptBlock struct {
	prefix []string // comments and blank lines before the command
	cmd    string
	line   int
	want   []string
}

func parseScript(t *testing.T, file string) (blocks []scriptBlock, trailer []string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cur *scriptBlock
	var pending []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "> "):
			blocks = append(blocks, scriptBlock{prefix: pending, cmd: strings.TrimPrefix(line, "> "), line: n})
			cur, pending = &blocks[len(blocks)-1], nil
		case line == "" || strings.HasPrefix(line, "#"):
			cur = nil
			pending = append(pending, line)
		case cur == nil:
			t.Fatalf("%s:%d: output line outside a command: %q", file, n, line)
		default:
			cur.want = append(cur.want, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks, pending
}

func runScript(t *testing.T, file string) {
	blocks, trailer := parseScript(t, file)
	r := &scriptRunner{t: t}
	var out strings.Builder
	failed := false
	for _, b := range blocks {
		got := r.exec(b.cmd)
		if !*rewrite && strings.Join(got, "\n") != strings.Join(b.want, "\n") {
			failed = true
			t.Errorf("%s:%d: > %s\ngot:\n%s\nwant:\n%s", file, b.line, b.cmd,
				strings.Join(got, "\n"), strings.Join(b.want, "\n"))
		}
		for _, p := range b.prefix {
			out.WriteString(p + "\n")
		}
		out.WriteString("> " + b.cmd + "\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
	}
	for _, p := range trailer {
		out.WriteString(p + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if failed {
		t.Log("run with -rewrite to record the actual output")
	}
}

// scriptRunner plays the driver for a script: it owns one machine and a
// virtual clock.
type scriptRunner struct {
	t   *testing.T
	m   *core.Machine
	cfg core.Config
	now core.Instant
	seq int
}

func (r *scriptRunner) exec(line string) []string {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return []string{"error: empty command"}
	}
	cmd, args := fields[0], scriptArgs(fields[1:])
	if cmd != "new" && r.m == nil {
		return []string{"error: no machine; start with > new"}
	}
	out, err := r.run(cmd, args)
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	return out
}

// scriptArgs splits "k=v" and bare words; a bare word maps to "".
func scriptArgs(fields []string) map[string]string {
	args := map[string]string{}
	for i, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			k, v = f, ""
			if i == 0 {
				args["_"] = f
			}
		}
		args[k] = v
	}
	return args
}

func (r *scriptRunner) run(cmd string, a map[string]string) ([]string, error) {
	if cmd == "new" {
		return nil, r.newMachine(a)
	}
	conn := r.m.Conn()
	if c, ok := a["conn"]; ok {
		n, err := strconv.ParseUint(c, 10, 64)
		if err != nil {
			return nil, err
		}
		conn = core.ConnID(n)
	}
	switch cmd {
	case "open":
		return nil, r.m.Open(r.now)
	case "ingest":
		return r.ingest(a)
	case "batch":
		n := intArg(a, "n", 2)
		recs := make([][]byte, n)
		for i := range recs {
			r.seq++
			recs[i] = []byte(fmt.Sprintf("r%d", r.seq))
		}
		o, err := r.m.IngestBatch(r.now, recordType(a, r.cfg.RecordType), recs)
		if err != nil {
			return nil, err
		}
		return []string{fmt.Sprintf("offset=%d", o)}, nil
	case "poll":
		return r.poll(), nil
	case "sent":
		first, last, err := rangeArg(a["_"])
		if err != nil {
			return nil, err
		}
		for o := first; o <= last; o++ {
			if err := r.m.Sent(r.now, conn, o); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case "ack":
		resp := core.Response{Kind: core.RespAck}
		if v := a["_"]; v != "missing" {
			o, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, err
			}
			resp.Offset, resp.HasOffset = o, true
		}
		return nil, r.m.Receive(r.now, conn, resp)
	case "create":
		resp := core.Response{Kind: core.RespCreate}
		if id, ok := a["id"]; ok {
			resp.StreamID, resp.HasStreamID = id, true
		}
		return nil, r.m.Receive(r.now, conn, resp)
	case "resume":
		resp := core.Response{Kind: core.RespResume}
		if w, ok := a["w"]; ok {
			o, err := strconv.ParseInt(w, 10, 64)
			if err != nil {
				return nil, err
			}
			resp.Offset, resp.HasOffset = o, true
		}
		return nil, r.m.Receive(r.now, conn, resp)
	case "signal":
		resp := core.Response{Kind: core.RespCloseSignal}
		if d, ok := a["d"]; ok {
			dur, err := time.ParseDuration(d)
			if err != nil {
				return nil, err
			}
			resp.Duration, resp.HasDuration = dur, true
		}
		return nil, r.m.Receive(r.now, conn, resp)
	case "drop":
		code := core.CodeUnavailable
		if c, ok := a["code"]; ok {
			found := false
			for i := core.CodeOK; i <= core.CodeUnauthenticated; i++ {
				if i.String() == c {
					code, found = i, true
				}
			}
			if !found {
				return nil, fmt.Errorf("unknown code %q", c)
			}
		}
		return nil, r.m.ConnectionFailed(r.now, conn, code, nil)
	case "tick":
		if d, ok := a["_"]; ok && d != "" {
			dur, err := time.ParseDuration(d)
			if err != nil {
				return nil, err
			}
			r.now = r.now.Add(dur)
		} else if at, armed := r.m.NextDeadline(); armed {
			r.now = at
		} else {
			return []string{"no deadline"}, nil
		}
		return []string{"t=" + time.Duration(r.now).String()}, r.m.Tick(r.now)
	case "close":
		return nil, r.m.Close(r.now)
	case "state":
		return []string{r.state()}, nil
	case "unacked":
		var out []string
		for _, b := range r.m.Unacked(nil) {
			out = append(out, fmt.Sprintf("offset=%d records=%q", b.Offset, b.Records))
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}

func (r *scriptRunner) newMachine(a map[string]string) error {
	kind := core.Ephemeral
	if a["kind"] == "persistent" {
		kind = core.Persistent
	}
	cfg := core.DefaultConfig(kind, recordType(a, core.RecordJSON))
	cfg.Backoff = core.Backoff{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2}
	cfg.StreamID = a["streamid"]
	cfg.ClientRequestID = a["request"]
	if _, ok := a["attempted"]; ok {
		cfg.History = &core.History{Durable: int64(intArg(a, "durable", -1)), Attempted: int64(intArg(a, "attempted", -1))}
	}
	cfg.MaxInflightCalls = intArg(a, "calls", cfg.MaxInflightCalls)
	cfg.MaxInflightBytes = int64(intArg(a, "bytes", int(cfg.MaxInflightBytes)))
	cfg.MaxCallBytes = int64(intArg(a, "callbytes", int(cfg.MaxCallBytes)))
	cfg.Retries = intArg(a, "retries", cfg.Retries)
	cfg.Seed = uint64(intArg(a, "seed", int(cfg.Seed)))
	_, cfg.DisableRecovery = a["norecovery"]
	for key, dst := range map[string]*time.Duration{"grace": &cfg.MaxGrace, "acktimeout": &cfg.AckTimeout,
		"opentimeout": &cfg.OpenTimeout, "closetimeout": &cfg.CloseTimeout} {
		if v, ok := a[key]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			*dst = d
		}
	}
	m, err := core.New(cfg)
	if err != nil {
		return err
	}
	r.m, r.cfg, r.now, r.seq = m, cfg, 0, 0
	return nil
}

func (r *scriptRunner) ingest(a map[string]string) ([]string, error) {
	var out []string
	size := intArg(a, "size", 0)
	for i := 0; i < intArg(a, "n", 1); i++ {
		r.seq++
		rec := []byte(fmt.Sprintf("r%d", r.seq))
		if size > 0 {
			rec = make([]byte, size)
		}
		o, err := r.m.IngestRecord(r.now, recordType(a, r.cfg.RecordType), rec)
		if err != nil {
			return out, err
		}
		out = append(out, fmt.Sprintf("offset=%d", o))
	}
	return out, nil
}

func (r *scriptRunner) poll() []string {
	var out []string
	for acts := r.m.Poll(nil); len(acts) > 0; acts = r.m.Poll(nil) {
		for _, act := range acts {
			out = append(out, formatAction(act))
		}
	}
	return out
}

func formatAction(a core.Action) string {
	switch a.Kind {
	case core.ActOpen:
		if a.Resume {
			return fmt.Sprintf("open conn=%d resume id=%s", a.Conn, a.StreamID)
		}
		if a.RequestID != "" {
			return fmt.Sprintf("open conn=%d create request=%s", a.Conn, a.RequestID)
		}
		return fmt.Sprintf("open conn=%d create", a.Conn)
	case core.ActSend:
		payload := fmt.Sprintf("%q", a.Record)
		if a.Records != nil {
			payload = fmt.Sprintf("%q", a.Records)
		}
		return fmt.Sprintf("send conn=%d offset=%d wire=%d %s", a.Conn, a.Offset, a.Wire, payload)
	case core.ActComplete:
		if a.Reconciled {
			return fmt.Sprintf("complete %d..%d reconciled", a.Offset, a.Last)
		}
		return fmt.Sprintf("complete %d..%d", a.Offset, a.Last)
	case core.ActFail:
		return fmt.Sprintf("fail %d..%d: %v", a.Offset, a.Last, a.Err)
	case core.ActCloseSend, core.ActAbort:
		return fmt.Sprintf("%s conn=%d", a.Kind, a.Conn)
	case core.ActFinished:
		if a.Err != nil {
			return fmt.Sprintf("finished: %v", a.Err)
		}
		return "finished"
	}
	return a.Kind.String()
}

func (r *scriptRunner) state() string {
	m := r.m
	calls, bytes := m.Pending()
	s := fmt.Sprintf("state=%s conn=%d floor=%d maxSent=%d next=%d attempted=%d pending=%d/%dB",
		m.State(), m.Conn(), m.AckFloor(), m.MaxSent(), m.LastAssigned()+1, m.MaxAttempted(), calls, bytes)
	if at, ok := m.NextDeadline(); ok {
		s += " deadline=" + time.Duration(at).String()
	}
	if err := m.Err(); err != nil {
		var pe *core.ProtocolError
		if errors.As(err, &pe) {
			s += fmt.Sprintf(" violation=%d", pe.Rule)
		}
		s += " err=" + err.Error()
	}
	return s
}

func intArg(a map[string]string, key string, def int) int {
	if v, ok := a[key]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func recordType(a map[string]string, def core.RecordType) core.RecordType {
	switch a["type"] {
	case "json":
		return core.RecordJSON
	case "proto":
		return core.RecordProto
	}
	return def
}

// rangeArg parses "a..b" or "a".
func rangeArg(s string) (int64, int64, error) {
	lo, hi, ok := strings.Cut(s, "..")
	first, err := strconv.ParseInt(lo, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return first, first, nil
	}
	last, err := strconv.ParseInt(hi, 10, 64)
	return first, last, err
}
