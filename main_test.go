package zbstream_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The runnable examples start a reference server and a client: they must
// leave no goroutine behind, the client's or the server's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
