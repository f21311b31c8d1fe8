package admin

import (
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
)

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) { clitest.Main(m) }
