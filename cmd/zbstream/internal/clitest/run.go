package clitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// Command is a subcommand's Run.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Commands are the subcommands a test runs, by name. A package's tests
// list their own Run and the commands they need beside it (serve, most
// often); the command table of main is not importable from them.
type Commands map[string]Command

// Run runs the command line args (args[0] the subcommand) as main does and
// returns the exit code.
func (c Commands) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "clitest: no subcommand")
		return cli.ExitUsage
	}
	run, ok := c[args[0]]
	if !ok {
		panic(fmt.Sprintf("clitest: the test did not list subcommand %q", args[0]))
	}
	return cli.Exit(run(ctx, args[1:], stdout, stderr), stderr)
}

// RunCmd runs the command line in-process (for at most a minute) and
// returns its exit code, stdout and stderr.
func (c Commands) RunCmd(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := c.Run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// WantCode runs the command line and checks its exit code; it returns
// stdout.
func (c Commands) WantCode(t testing.TB, want int, args ...string) string {
	t.Helper()
	code, out, errs := c.RunCmd(t, args...)
	if code != want {
		t.Fatalf("zbstream %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out
}
