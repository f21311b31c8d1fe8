package server

import (
	"testing"
	"time"
)

// SetPreemptAfter sets how long a budget waiter waits before an idle
// reader is asked to yield (preemptAfter), for the test t and any server it
// starts afterwards; t's cleanup restores it.
func SetPreemptAfter(t testing.TB, d time.Duration) {
	old := preemptAfter
	preemptAfter = d
	t.Cleanup(func() { preemptAfter = old })
}

// BudgetHeldBy reports the bytes of the receive budget principal who holds.
func (s *Server) BudgetHeldBy(who string) int64 { return s.budget.heldBy(who) }
