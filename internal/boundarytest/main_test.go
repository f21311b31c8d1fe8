package boundarytest

import (
	"os"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
)

func TestMain(m *testing.M) {
	// Set before any stream starts: gRPC reads it when a call begins, and
	// every call of this binary is then traced, but in the child process
	// of TestKeptMessagesUntraced.
	if os.Getenv(envUntraced) == "" {
		grpc.EnableTracing = true
	}
	goleak.VerifyTestMain(m)
}
