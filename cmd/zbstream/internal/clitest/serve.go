package clitest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// Serve is a "zbstream serve" run in-process.
type Serve struct {
	Endpoint, Admin string  // printed by serve: its gRPC endpoint and admin URL
	Workspace       string  // printed with -oauth or -tables: the workspace URL
	Stdout, Stderr  *Buffer // what it wrote
	cancel          context.CancelFunc
	code            chan int
}

// StartServe runs serve (c["serve"]) with args, after -addr and -admin on
// free loopback ports, and waits for it to print its addresses (the
// workspace URL too, with -oauth or -tables). It is
// stopped at the end of the test, and must exit 0.
func (c Commands) StartServe(t *testing.T, args ...string) *Serve {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Serve{Stdout: &Buffer{}, Stderr: &Buffer{}, cancel: cancel, code: make(chan int, 1)}
	full := append([]string{"serve", "-addr", "127.0.0.1:0", "-admin", "127.0.0.1:0"}, args...)
	go func() { s.code <- c.Run(ctx, full, s.Stdout, s.Stderr) }()
	t.Cleanup(func() {
		if code := s.Stop(t); code != 0 {
			t.Errorf("serve exited %d, want 0; stderr:\n%s", code, s.Stderr)
		}
	})
	// serve prints the workspace line after the admin line.
	wantWorkspace := slices.Contains(args, "-oauth") || slices.Contains(args, "-tables")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(s.Stdout.String(), "\n") {
			if v, ok := strings.CutPrefix(line, "endpoint: "); ok {
				s.Endpoint = v
			}
			if v, ok := strings.CutPrefix(line, "admin: "); ok {
				s.Admin = v
			}
			if v, ok := strings.CutPrefix(line, "workspace: "); ok {
				s.Workspace = v
			}
		}
		if s.Endpoint != "" && s.Admin != "" && (s.Workspace != "" || !wantWorkspace) {
			return s
		}
		select {
		case code := <-s.code:
			s.code <- code
			t.Fatalf("serve exited %d before listening; stderr:\n%s", code, s.Stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed no addresses; stdout:\n%s\nstderr:\n%s", s.Stdout, s.Stderr)
	return nil
}

// Stop cancels serve (as Ctrl-C does) and returns its exit code.
func (s *Serve) Stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code := <-s.code:
		s.code <- code
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop; stderr:\n%s", s.Stderr)
		return -1
	}
}
