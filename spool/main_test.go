package spool_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind. A child process
// of the crash tests runs its role instead of the tests.
func TestMain(m *testing.M) {
	if role := os.Getenv(envChildRole); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}
