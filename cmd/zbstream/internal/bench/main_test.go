package bench

import (
	"context"
	"os"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/serve"
)

// TestMain checks that no test leaves a goroutine behind. Started as
// "bench.test serve ...", it is that server instead: bench starts its
// server as a process of its own from os.Executable, which under test is
// this binary, and would otherwise run the tests again in every child.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(cmds.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	clitest.Main(m)
}

// cmds are the subcommands these tests run in-process, as main runs them.
var cmds = clitest.Commands{"bench": Run, "serve": serve.Run}
