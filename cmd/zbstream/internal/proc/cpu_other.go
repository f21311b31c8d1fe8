//go:build !unix && !windows

package proc

import "time"

// CPUTime is not available here (no getrusage, no GetProcessTimes): it
// returns false, and bench reports the CPU per row as unknown.
func CPUTime() (time.Duration, bool) { return 0, false }
