package demo

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
)

// TestDemo runs the demo at a small size, with its server and client
// SIGKILLs, and checks its verification: exactly-once for persistent
// streams, at-least-once for ephemeral ones.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and starts processes")
	}
	bin := clitest.Binary(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"persistent", []string{"demo", "-records", "20000", "-fault-every", "40", "-kill-server", "2", "-kill-client", "2"},
			[]string{"duplicates 0, lost 0", "verified: exactly-once", "server SIGKILL 2", "client SIGKILL 2"}},
		{"ephemeral", []string{"demo", "-records", "20000", "-fault-every", "40", "-ephemeral"},
			[]string{", lost 0", "verified: at-least-once", "server SIGKILL 1", "client SIGKILL 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := exec.Command(bin, tc.args...)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("demo: %v\n%s", err, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			checkPeakLine(t, out.String())
		})
	}
}

// TestDemoBadFlags: bad flags are usage errors (exit 2) with a message.
func TestDemoBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "-records", "0"},
		{"demo", "-record-size", "1"},
		{"demo", "-batch", "-3"},
		{"demo", "-nope"},
		{"demo", "extra"},
	} {
		var out bytes.Buffer
		if code := cmds.Run(t.Context(), args, &out, &out); code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, cli.ExitUsage, out.String())
		}
		if out.Len() == 0 {
			t.Errorf("%v: no message", args)
		}
	}
	var out bytes.Buffer
	if code := cmds.Run(t.Context(), []string{"demo", "-h"}, &out, &out); code != cli.ExitOK || !strings.Contains(out.String(), "-records") {
		t.Errorf("demo -h: exit %d\n%s", code, out.String())
	}
}

// checkPeakLine: where /proc tells peak RSS, the summary has a line of it
// with every process's figure known (none "?"). The figures themselves are
// reported, not checked.
func checkPeakLine(t *testing.T, out string) {
	t.Helper()
	if _, ok := proc.VmHWM("self"); !ok {
		return
	}
	_, rest, ok := strings.Cut(out, "  peak RSS         parent ")
	line, _, _ := strings.Cut(rest, "\n")
	if !ok || !strings.Contains(line, "server ") || !strings.Contains(line, "client ") || strings.Contains(line, "?") {
		t.Errorf("no peak RSS line for every process: %q\n%s", line, out)
	}
}
