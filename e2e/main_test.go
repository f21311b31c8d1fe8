package e2e_test

import (
	"flag"
	"fmt"
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
	flag.Parse()
	if *recordSize < minRecordSize {
		fmt.Fprintf(os.Stderr, "-record-size %d: at least %d bytes (a JSON object)\n", *recordSize, minRecordSize)
		os.Exit(2)
	}
	goleak.VerifyTestMain(m)
}
