package proc

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// VmHWM returns the peak RSS of process pid ("self" for this one), in
// bytes, or false where it cannot be read (not Linux, process ended).
func VmHWM(pid string) (int64, bool) {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
