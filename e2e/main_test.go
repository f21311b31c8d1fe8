package e2e_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every end-to-end test must leave no goroutine behind: the client's
// connection, sender, timer and callback goroutines and the server's. Run
// with envBenchServer set, the binary is a benchmark's server instead.
func TestMain(m *testing.M) {
	if engine := os.Getenv(envBenchServer); engine != "" {
		os.Exit(serveBenchChild(engine))
	}
	goleak.VerifyTestMain(m)
}
