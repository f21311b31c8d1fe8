package demo

import (
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
)

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) { clitest.Main(m) }

// cmds are the subcommands these tests run in-process, as main runs them.
var cmds = clitest.Commands{"demo": Run}
