package clitest

import (
	"strings"
	"testing"
)

// WantPrefixOnce checks that a command's error output says "zbstream:"
// once, at its start (cli.Exit adds it; a wrapped error must not repeat it).
func WantPrefixOnce(t testing.TB, errOut string) {
	t.Helper()
	if n := strings.Count(errOut, "zbstream:"); n != 1 || !strings.HasPrefix(errOut, "zbstream: ") {
		t.Errorf("the error says \"zbstream:\" %d times, want once at its start:\n%s", n, errOut)
	}
}
