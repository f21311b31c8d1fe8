package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
)

// serveChild is "zbstream serve -engine ENGINE" run as a process of its
// own (this binary again) on a free loopback port: a server as deployed,
// whose work, memory and garbage collections are not this process's,
// which measures the clients and their CPU time.
type serveChild struct {
	Endpoint string
	cmd      *exec.Cmd
	stderr   strings.Builder
	drained  chan struct{}
}

// startServeChild starts the server with the named engine (ackonly or
// memory) and returns once it listens.
func startServeChild(ctx context.Context, engine string) (*serveChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &serveChild{drained: make(chan struct{})}
	s.cmd = exec.CommandContext(ctx, exe, "serve", "-engine", engine, "-addr", "127.0.0.1:0", "-admin", "off", "-log-level", "error")
	s.cmd.Stderr = &proc.LockedWriter{W: &s.stderr}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the server process: %w", err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if ep, ok := strings.CutPrefix(lines.Text(), "endpoint: "); ok {
			s.Endpoint = ep
			break
		}
	}
	go func() { // keep draining, so that the server never blocks on stdout
		defer close(s.drained)
		_, _ = io.Copy(io.Discard, out)
	}()
	if s.Endpoint == "" {
		s.stop()
		return nil, fmt.Errorf("the server process printed no endpoint: %s", s.stderr.String())
	}
	return s, nil
}

// stop ends the server (it holds nothing worth a graceful stop) and
// waits for it.
func (s *serveChild) stop() {
	_ = s.cmd.Process.Kill()
	<-s.drained
	_ = s.cmd.Wait()
}
