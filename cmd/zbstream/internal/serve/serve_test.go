package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/server"
)

// TestServeStreamsEndToEnd runs serve with two principals on the bolt
// engine, ingests with the client, and drives every streams subcommand
// against it, then reads the data directory after the server stopped.
func TestServeStreamsEndToEnd(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	srv := cmds.StartServe(t, "-data", data, "-strict-duplicates", "-log-level", "warn",
		"-token", "alice:tok-alice:"+clitest.TableA, "-token", "bob:tok-bob:"+clitest.TableA+","+clitest.TableB)

	idA := ingestJSON(t, srv.Endpoint, "tok-alice", clitest.TableA, map[string]int{"seq": 0}, map[string]int{"seq": 1}, map[string]int{"seq": 2})
	idB := ingestJSON(t, srv.Endpoint, "tok-bob", clitest.TableB, map[string]string{"who": "bob"})

	adminArgs := []string{"-admin", srv.Admin}
	// list: a principal sees only its own streams.
	out := cmds.WantCode(t, 0, append([]string{"streams", "list", "-token", "tok-alice"}, adminArgs...)...)
	if !strings.Contains(out, idA) || strings.Contains(out, idB) || !strings.Contains(out, "ID") {
		t.Fatalf("alice's list:\n%s", out)
	}
	out = cmds.WantCode(t, 0, append([]string{"streams", "list", "-json", "-token", "tok-bob"}, adminArgs...)...)
	var list []admin.StreamInfo
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("list -json: %v\n%s", err, out)
	}
	if len(list) != 1 || list[0].ID != idB || list[0].Table != clitest.TableB || list[0].Principal != "bob" ||
		list[0].Kind != "persistent" || list[0].RecordType != "json" || list[0].Watermark != 0 || list[0].Records != 1 {
		t.Fatalf("bob's list: %+v", list)
	}
	// The token from the environment.
	t.Setenv(cli.EnvToken, "tok-alice")
	out = cmds.WantCode(t, 0, "streams", "show", idA, "-admin", srv.Admin)
	for _, want := range []string{"id:", idA, "persistent", clitest.TableA, "alice", "json", "watermark:", "2", "records:", "3", "active"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show: no %q in\n%s", want, out)
		}
	}
	// Another principal's stream is not found, as if it did not exist.
	cmds.WantCode(t, cli.ExitFailure, "streams", "show", idB, "-admin", srv.Admin)
	cmds.WantCode(t, cli.ExitFailure, "streams", "show", "ps-nonexistent", "-admin", srv.Admin)

	out = cmds.WantCode(t, 0, "streams", "records", "-admin", srv.Admin, idA)
	if out != "{\"seq\":0}\n{\"seq\":1}\n{\"seq\":2}\n" {
		t.Fatalf("records:\n%q", out)
	}
	out = cmds.WantCode(t, 0, "streams", "records", idA, "-admin", srv.Admin, "-from", "1", "-limit", "1")
	if out != "{\"seq\":1}\n" {
		t.Fatalf("records -from 1 -limit 1:\n%q", out)
	}
	out = cmds.WantCode(t, 0, "streams", "records", idA, "-admin", srv.Admin, "-from", "2", "-json")
	var rec admin.RecordInfo
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Offset != 2 || string(rec.JSON) != `{"seq":2}` {
		t.Fatalf("records -json: %v %+v\n%s", err, rec, out)
	}
	out = cmds.WantCode(t, 0, "streams", "records", idA, "-admin", srv.Admin, "-from", "9")
	if out != "" {
		t.Fatalf("records past the watermark:\n%q", out)
	}

	// Refused credentials: 5, for the admin endpoint and for the RPC.
	cmds.WantCode(t, cli.ExitAuth, "streams", "list", "-admin", srv.Admin, "-token", "wrong")
	cmds.WantCode(t, cli.ExitAuth, "streams", "retire", idA, "-endpoint", srv.Endpoint, "-table", clitest.TableA, "-token", "wrong")
	// Bob may not retire alice's stream: not found.
	cmds.WantCode(t, cli.ExitFailure, "streams", "retire", idA, "-endpoint", srv.Endpoint, "-table", clitest.TableA, "-token", "tok-bob")

	// Retire, the table looked up through the admin endpoint.
	out = cmds.WantCode(t, 0, "streams", "retire", idA, "-admin", srv.Admin, "-endpoint", srv.Endpoint)
	if !strings.Contains(out, "retired "+idA) || !strings.Contains(out, "last committed offset 2") {
		t.Fatalf("retire:\n%s", out)
	}
	out = cmds.WantCode(t, 0, "streams", "show", idA, "-admin", srv.Admin, "-json")
	var info admin.StreamInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || !info.Retired {
		t.Fatalf("show -json after retire: %v %+v", err, info)
	}
	// Retire with -table and -json, no admin endpoint: RetireStream's
	// answer is empty, so the watermark is not known.
	out = cmds.WantCode(t, 0, "streams", "retire", idB, "-endpoint", srv.Endpoint, "-table", clitest.TableB, "-token", "tok-bob", "-json")
	if !strings.Contains(out, `"retired": true`) || strings.Contains(out, `"watermark"`) {
		t.Fatalf("retire -json:\n%s", out)
	}

	// The data directory is locked while the server runs.
	_, _, errs := cmds.RunCmd(t, "streams", "list", "-data", data)
	if !strings.Contains(errs, "in use") {
		t.Fatalf("list -data while serving: %s", errs)
	}
	if code := srv.Stop(t); code != 0 {
		t.Fatalf("serve exited %d; stderr:\n%s", code, srv.Stderr)
	}
	// After the stop: read the directory directly (every stream).
	out = cmds.WantCode(t, 0, "streams", "list", "-data", data)
	if !strings.Contains(out, idA) || !strings.Contains(out, idB) || strings.Count(out, "retired") != 2 {
		t.Fatalf("list -data:\n%s", out)
	}
	out = cmds.WantCode(t, 0, "streams", "records", idA, "-data", data, "-limit", "2")
	if out != "{\"seq\":0}\n{\"seq\":1}\n" {
		t.Fatalf("records -data:\n%q", out)
	}
}

// TestServeTokensFile reads the principals from a file; the admin
// endpoint and the server accept them.
func TestServeTokensFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	spec := "# principal:token:tables\n\ncarol:tok:with:colons:" + clitest.TableA + ", " + clitest.TableB + "\n"
	if err := os.WriteFile(file, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := cmds.StartServe(t, "-engine", "memory", "-tokens-file", file, "-log-level", "warn")
	id := ingestJSON(t, srv.Endpoint, "tok:with:colons", clitest.TableB, map[string]int{"x": 1})
	out := cmds.WantCode(t, 0, "streams", "list", "-admin", srv.Admin, "-token", "tok:with:colons")
	if !strings.Contains(out, id) || !strings.Contains(out, "carol") {
		t.Fatalf("list:\n%s", out)
	}
	t.Setenv(cli.EnvToken, "")
	_, _, errs := cmds.RunCmd(t, "streams", "list", "-admin", srv.Admin)
	if !strings.Contains(errs, "give -token") {
		t.Fatalf("list without a token: %s", errs)
	}
}

// TestServeOpenModeEngines runs the memory and ack-only engines in open
// mode (no tokens), with rotation on.
func TestServeOpenModeEngines(t *testing.T) {
	for _, engine := range []string{"memory", "ackonly"} {
		t.Run(engine, func(t *testing.T) {
			srv := cmds.StartServe(t, "-engine", engine, "-rotate", "1m", "-grace", "1s", "-log-level", "warn")
			id := ingestJSON(t, srv.Endpoint, "", clitest.TableA, map[string]int{"n": 1}, map[string]int{"n": 2})
			out := cmds.WantCode(t, 0, "streams", "show", id, "-admin", srv.Admin, "-json")
			var info admin.StreamInfo
			if err := json.Unmarshal([]byte(out), &info); err != nil || info.Watermark != 1 || info.Principal != "anonymous" {
				t.Fatalf("show: %v %+v", err, info)
			}
			out = cmds.WantCode(t, 0, "streams", "records", id, "-admin", srv.Admin)
			want := "{\"n\":1}\n{\"n\":2}\n"
			if engine == "ackonly" {
				want = "" // it stores no record
			}
			if out != want {
				t.Fatalf("records: %q, want %q", out, want)
			}
			cmds.WantCode(t, 0, "streams", "retire", id, "-admin", srv.Admin, "-endpoint", srv.Endpoint)
		})
	}
}

// TestServeFlagErrors: bad flags and arguments exit 2, unusable files 3,
// a port or data directory in use 1, -h 0.
func TestServeFlagErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	lockedDir := filepath.Join(dir, "locked")
	st, err := server.OpenBoltStore(lockedDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	badTokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(badTokens, []byte("# principals\nalice:tok:main.a.b\nbroken line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	mem := []string{"-engine", "memory"}
	for _, tc := range []struct {
		name string
		code int
		args []string
		msg  string
	}{
		{"help", cli.ExitOK, []string{"-h"}, "Usage: zbstream serve"},
		{"unknown flag", cli.ExitUsage, []string{"-nope"}, "flag provided but not defined"},
		{"stray argument", cli.ExitUsage, []string{"extra"}, "unexpected argument"},
		{"bad engine", cli.ExitUsage, []string{"-engine", "rocks"}, "want bolt, memory or ackonly"},
		{"bad addr", cli.ExitUsage, append([]string{"-addr", "nohostport"}, mem...), "want host:port"},
		{"bad duration", cli.ExitUsage, []string{"-rotate", "soon"}, "invalid value"},
		{"grace over rotate", cli.ExitUsage, append([]string{"-rotate", "1s", "-grace", "2s"}, mem...), "shorter than -rotate"},
		{"negative limit", cli.ExitUsage, append([]string{"-max-connections-per-principal", "-1"}, mem...), "negative"},
		{"bad bytes", cli.ExitUsage, []string{"-receive-budget", "lots"}, `invalid value "lots" for flag -receive-budget: want a number of bytes`},
		{"zero bytes", cli.ExitUsage, append([]string{"-max-message-bytes", "0"}, mem...), "-max-message-bytes must be between 1 and"},
		{"bad log level", cli.ExitUsage, []string{"-log-level", "loud"}, "-log-level"},
		{"token spec without table", cli.ExitUsage, append([]string{"-token", "alice:tok"}, mem...), "want name:TOKEN"},
		{"token spec bad table", cli.ExitUsage, append([]string{"-token", "alice:tok:notatable"}, mem...), "not catalog.schema.table"},
		{"token spec empty token", cli.ExitUsage, append([]string{"-token", "alice::main.a.b"}, mem...), "empty token"},
		{"duplicate token", cli.ExitUsage, append([]string{"-token", "a:t:main.a.b", "-token", "b:t:main.a.b"}, mem...), "twice"},
		{"bad tokens file", cli.ExitInput, append([]string{"-tokens-file", badTokens}, mem...), badTokens + ":3"},
		{"missing tokens file", cli.ExitInput, append([]string{"-tokens-file", filepath.Join(dir, "none")}, mem...), "tokens file"},
		{"open with tokens", cli.ExitUsage, append([]string{"-open", "-token", "a:t:main.a.b"}, mem...), "exclude"},
		{"open mode off loopback", cli.ExitUsage, append([]string{"-addr", "0.0.0.0:0"}, mem...), "needs -open"},
		{"cert without key", cli.ExitUsage, append([]string{"-tls-cert", "c.pem"}, mem...), "go together"},
		{"missing TLS files", cli.ExitInput, append([]string{"-tls-cert", filepath.Join(dir, "c.pem"), "-tls-key", filepath.Join(dir, "k.pem")}, mem...), "TLS"},
		{"bad TLS files", cli.ExitInput, append([]string{"-tls-cert", badTokens, "-tls-key", badTokens}, mem...), "TLS certificate"},
		{"port in use", cli.ExitFailure, append([]string{"-addr", busy.Addr().String()}, mem...), "already in use"},
		{"admin port in use", cli.ExitFailure, append([]string{"-addr", "127.0.0.1:0", "-admin", busy.Addr().String()}, mem...), "already in use"},
		{"data dir in use", cli.ExitFailure, []string{"-addr", "127.0.0.1:0", "-admin", "off", "-data", lockedDir}, "in use by another process"},
		{"bolt without data", cli.ExitUsage, []string{"-data", ""}, "needs -data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "-data", data}, tc.args...)
			code, _, errs := cmds.RunCmd(t, args...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Fatalf("exit %d, want %d; stderr should contain %q:\n%s", code, tc.code, tc.msg, errs)
			}
			if strings.Contains(errs, "tok-secret") {
				t.Fatalf("a token in the message:\n%s", errs)
			}
		})
	}
}

// TestServeTLS serves gRPC and the admin endpoint over TLS with a
// self-signed certificate; the streams command trusts it with -ca.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := clitest.WriteSelfSigned(t, dir)
	srv := cmds.StartServe(t, "-engine", "memory", "-tls-cert", cert, "-tls-key", key, "-log-level", "warn",
		"-token", "alice:tok-alice:"+clitest.TableA)
	if !strings.HasPrefix(srv.Endpoint, "https://") || !strings.HasPrefix(srv.Admin, "https://") {
		t.Fatalf("endpoint %s, admin %s: want https", srv.Endpoint, srv.Admin)
	}
	// An untrusted certificate fails; -ca makes it work.
	code, _, _ := cmds.RunCmd(t, "streams", "list", "-admin", srv.Admin, "-token", "tok-alice")
	if code == 0 {
		t.Fatal("list over TLS without -ca succeeded")
	}
	out := cmds.WantCode(t, 0, "streams", "list", "-admin", srv.Admin, "-token", "tok-alice", "-ca", cert)
	if !strings.Contains(out, "WATERMARK") {
		t.Fatalf("list:\n%s", out)
	}
	cmds.WantCode(t, cli.ExitFailure, "streams", "retire", "ps-none", "-endpoint", srv.Endpoint, "-table", clitest.TableA, "-token", "tok-alice", "-ca", cert)
	// Without -ca the retire is a usage error that names the flag.
	code, _, errs := cmds.RunCmd(t, "streams", "retire", "ps-none", "-endpoint", srv.Endpoint, "-table", clitest.TableA, "-token", "tok-alice")
	if code != cli.ExitUsage || !strings.Contains(errs, "with -ca)") {
		t.Fatalf("retire without -ca: exit %d, want %d naming -ca: %s", code, cli.ExitUsage, errs)
	}
	clitest.WantPrefixOnce(t, errs)
}

const envServeChild = "ZBSTREAM_TEST_SERVE_CHILD"

// TestServeChild is the server process of TestServeSIGINT (skipped
// otherwise): it runs "zbstream serve" as main does.
func TestServeChild(t *testing.T) {
	spec := os.Getenv(envServeChild)
	if spec == "" {
		t.Skip("the child process of TestServeSIGINT")
	}
	var args []string
	if err := json.Unmarshal([]byte(spec), &args); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmds.Run(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// TestServeSIGINT runs serve as a process, ingests, sends SIGINT: the
// process exits 0 and has closed its store (the directory opens again and
// holds what was acknowledged).
func TestServeSIGINT(t *testing.T) {
	if os.Getenv(envServeChild) != "" {
		t.Skip("in the child")
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args, _ := json.Marshal([]string{"serve", "-addr", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-data", data, "-token", "alice:tok-alice:" + clitest.TableA})
			cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
			cmd.Env = append(os.Environ(), envServeChild+"="+string(args))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr clitest.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := false
			defer func() {
				if !exited {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			}()
			lines := make(chan string, 8)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var endpoint string
			timeout := time.After(30 * time.Second)
			for endpoint == "" {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("child ended; stderr:\n%s", stderr.String())
					}
					endpoint, _ = strings.CutPrefix(l, "endpoint: ")
				case <-timeout:
					t.Fatalf("no endpoint; stderr:\n%s", stderr.String())
				}
			}
			id := ingestJSON(t, endpoint, "tok-alice", clitest.TableA, map[string]int{"a": 1}, map[string]int{"a": 2})
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			werr := make(chan error, 1)
			go func() { werr <- cmd.Wait() }()
			select {
			case err := <-werr:
				exited = true
				if err != nil {
					t.Fatalf("serve after %v: %v; stderr:\n%s", sig, err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("serve did not stop on %v; stderr:\n%s", sig, stderr.String())
			}
			if !strings.Contains(stderr.String(), "msg=stopped") {
				t.Fatalf("no clean stop logged:\n%s", stderr.String())
			}
			out := cmds.WantCode(t, 0, "streams", "records", id, "-data", data)
			if out != "{\"a\":1}\n{\"a\":2}\n" {
				t.Fatalf("records after the stop: %q", out)
			}
		})
	}
}

// ingestJSON creates a persistent stream into table with token ("" for
// open mode), ingests one JSON record per value and returns the stream id.
func ingestJSON(t *testing.T, endpoint, token, table string, values ...any) string {
	t.Helper()
	var opts []zbstream.Option
	if token != "" {
		opts = append(opts, zbstream.WithToken(token))
	}
	c, err := zbstream.NewClient(endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.CreatePersistentStream(ctx, table)
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	for _, v := range values {
		if _, err := st.IngestJSON(ctx, v); err != nil {
			t.Fatalf("ingest: %v", err)
		}
	}
	if err := st.Close(ctx); err != nil {
		t.Fatalf("close stream: %v", err)
	}
	return st.StreamID()
}
