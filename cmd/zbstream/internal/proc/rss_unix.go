//go:build unix

package proc

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// PeakRSS returns the peak resident set size of a process that has ended,
// in bytes: ru_maxrss, which is in kilobytes on Linux and the BSDs and in
// bytes on macOS.
func PeakRSS(ps *os.ProcessState) (int64, bool) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, false
	}
	maxrss := int64(ru.Maxrss) // int32 on 32-bit Linux
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return maxrss, true
	}
	return maxrss << 10, true
}

// CurrentRSS returns this process's resident set size now, in bytes, where
// /proc tells it (Linux), and false elsewhere.
func CurrentRSS() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0, false
	}
	return resident * int64(os.Getpagesize()), true
}
