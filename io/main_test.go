package io_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: the driver's connection,
// sender, timer and callback goroutines included.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
