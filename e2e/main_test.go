package e2e_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every end-to-end test must leave no goroutine behind: the client's
// connection, sender, timer and callback goroutines and the server's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
