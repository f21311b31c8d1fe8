package proc

import (
	"runtime"
	"testing"
)

// TestCPUTimeCountsWork: the CPU time read after some work is above the
// one read before it, by at least part of what the work took.
func TestCPUTimeCountsWork(t *testing.T) {
	before, ok := CPUTime()
	if !ok {
		if runtime.GOOS == "windows" || runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatal("CPUTime: not available")
		}
		t.Skip("no CPU time on " + runtime.GOOS)
	}
	x := uint64(1)
	for i := range 50_000_000 { // tens of milliseconds of CPU
		x = x*6364136223846793005 + uint64(i)
	}
	after, _ := CPUTime()
	if after <= before {
		t.Fatalf("CPU time %v after the work, %v before (x=%d)", after, before, x)
	}
}
