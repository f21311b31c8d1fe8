//go:build windows

package proc

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time this process has used so far, user and
// kernel, every thread's (GetProcessTimes). Two readings around a piece
// of work give what it cost, as long as nothing else runs in the process
// meanwhile.
func CPUTime() (time.Duration, bool) {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, false
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		return 0, false
	}
	// A FILETIME duration counts 100-nanosecond intervals.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100), true
}
