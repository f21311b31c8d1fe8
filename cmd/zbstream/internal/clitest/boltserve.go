package clitest

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// BoltServe is a "zbstream serve -engine bolt" process (the binary Binary
// builds) on a fixed address, which a crash test kills with SIGKILL and
// starts again on the same address and data.
type BoltServe struct {
	Addr string // host:port of its gRPC endpoint
	bin  string
	args []string
	cmd  *exec.Cmd
}

// StartBoltServe runs bin serve on addr with its bolt database in dir,
// its admin endpoint off and its log at error level; args are added after
// those (a flag given again there, -admin ADDR, wins). It waits until the
// server listens, and kills it at the end of the test.
func StartBoltServe(t *testing.T, bin, dir, addr string, args ...string) *BoltServe {
	t.Helper()
	s := &BoltServe{Addr: addr, bin: bin,
		args: append([]string{"serve", "-engine", "bolt", "-data", dir, "-addr", addr, "-admin", "off", "-log-level", "error"}, args...)}
	s.Start(t)
	t.Cleanup(func() { s.Kill(t) })
	return s
}

// Start runs the server (again) and waits until it listens.
func (s *BoltServe) Start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command(s.bin, s.args...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	s.cmd.Stderr = &errb
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "endpoint: ") {
			go func() { // keep draining so the server never blocks on stdout
				for lines.Scan() {
				}
			}()
			return
		}
	}
	s.cmd.Wait()
	t.Fatalf("serve printed no endpoint: %s", errb.String())
}

// Kill ends the server with SIGKILL (nothing flushed, nothing closed) and
// waits for it to exit; it does nothing when the server is not running.
func (s *BoltServe) Kill(t *testing.T) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}
