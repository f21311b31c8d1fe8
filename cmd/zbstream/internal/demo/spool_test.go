package demo

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
)

// TestDemoSpool runs the -spool demo at a small size: client SIGKILLs at
// random points, a server SIGKILL and faults, no replay of the source, and
// every returned call verified exactly once.
func TestDemoSpool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and starts processes")
	}
	bin := clitest.Binary(t)
	var out bytes.Buffer
	cmd := exec.Command(bin, "demo", "-spool", "-records", "6000", "-batch", "10", "-fault-every", "40", "-kill-server", "1", "-kill-client", "3")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo -spool: %v\n%s", err, out.String())
	}
	for _, w := range []string{"duplicates 0, lost 0", "verified: exactly-once for every call that returned", "client SIGKILL 3", "server SIGKILL 1", "never returned"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	checkPeakLine(t, out.String())
	t.Log(out.String())
}

// TestDemoSpoolBadFlags: -spool with ephemeral streams or a bad goroutine
// count is a usage error.
func TestDemoSpoolBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "-spool", "-ephemeral"},
		{"demo", "-spool", "-goroutines", "0"},
	} {
		var out bytes.Buffer
		if code := cmds.Run(t.Context(), args, &out, &out); code != cli.ExitUsage || out.Len() == 0 {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, cli.ExitUsage, out.String())
		}
	}
}
