package arrowstream_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test may leave a goroutine behind: the stream's, the fake server's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
