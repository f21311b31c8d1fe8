//go:build unix

package proc

import (
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
