package serve

import (
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
)

// TestServeTokensOneScopePerName (issue 21): a principal name given twice
// with different tables is refused at start; twice with the same tables
// (two tokens of one principal, e.g. while rotating them) is fine.
func TestServeTokensOneScopePerName(t *testing.T) {
	_, err := buildTokens([]string{"alice:t1:" + clitest.TableA, "alice:t2:" + clitest.TableB}, "")
	if err == nil || !strings.Contains(err.Error(), `principal "alice" is given twice with different tables`) || strings.Contains(err.Error(), "t2:") {
		t.Fatalf("two scopes for one name: %v", err)
	}
	if code := cli.CodeOf(err); code != cli.ExitUsage {
		t.Fatalf("exit code %d, want %d", code, cli.ExitUsage)
	}
	tok, err := buildTokens([]string{"alice:t1:" + clitest.TableA + "," + clitest.TableB, "alice:t2:" + clitest.TableB + "," + clitest.TableA}, "")
	if err != nil || len(tok) != 2 {
		t.Fatalf("one scope, two tokens: %v %v", tok, err)
	}
}
