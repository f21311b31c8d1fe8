package redpandatest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test may leave a goroutine behind: the client's, the server's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
