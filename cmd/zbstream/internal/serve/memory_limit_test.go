package serve

import (
	"math"
	"runtime/debug"
	"testing"
)

// serve's soft memory limit: the budget plus memoryHeadroom, which a
// GOMEMLIMIT above it (or "off") does not lift and a lower one replaces;
// none for the memory engine.
func TestServeMemoryLimit(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	const budget = 256 << 20
	want := int64(budget + memoryHeadroom)
	for _, tc := range []struct {
		env     string // GOMEMLIMIT
		runtime int64  // the limit the runtime has from it
		engine  string
		ret     int64
		after   int64
	}{
		{"", math.MaxInt64, "bolt", want, want},
		{"off", math.MaxInt64, "bolt", want, want},
		{"2GiB", 2 << 30, "bolt", want, want},
		{"100MiB", 100 << 20, "bolt", 100 << 20, 100 << 20},
		{"", math.MaxInt64, "ackonly", want, want},
		{"", math.MaxInt64, "memory", 0, math.MaxInt64},
		{"2GiB", 2 << 30, "memory", 0, 2 << 30},
	} {
		t.Setenv("GOMEMLIMIT", tc.env)
		debug.SetMemoryLimit(tc.runtime)
		if got := setMemoryLimit(tc.engine, budget); got != tc.ret {
			t.Errorf("GOMEMLIMIT=%q, %s engine: returned %d, want %d", tc.env, tc.engine, got, tc.ret)
		}
		if got := debug.SetMemoryLimit(-1); got != tc.after {
			t.Errorf("GOMEMLIMIT=%q, %s engine: limit %d, want %d", tc.env, tc.engine, got, tc.after)
		}
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := setMemoryLimit("bolt", math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("a budget of MaxInt64: limit %d", got)
	}
}
