package ingest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/internal/filelock"
)

// lock is held for a whole run, on the file beside the state file
// whose name adds ".lock": two runs of one ingestion at once would write
// the same streams, each resuming them from the other's watermark, and
// offsets would no longer name the file's calls (issue 25). The operating
// system releases it when the process ends, however it ends, so a killed
// run never leaves it behind; the file itself stays, holding the pid of
// the last run that took it.
type lock struct{ f *os.File }

// lockState takes the lock of state file path, or says which
// process has it and what to do.
func lockState(path string) (*lock, error) {
	lockPath := path + ".lock"
	f, err := filelock.Lock(lockPath)
	if errors.Is(err, filelock.ErrLocked) {
		holder := ""
		if b, rerr := os.ReadFile(lockPath); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder = fmt.Sprintf(" (process %d)", pid)
			}
		}
		return nil, cli.WithCode(cli.ExitFailure, fmt.Errorf("state file %s is in use by another zbstream ingest%s: two runs of one ingestion at once would write the same streams. "+
			"Wait for it to end or stop it, then run again (a killed \"go run\" leaves its zbstream process running: stop that one)", path, holder))
	}
	if err != nil {
		return nil, cli.WithCode(cli.ExitFailure, fmt.Errorf("state file %s: %w", path, err))
	}
	// The pid is for the message above only: the lock is the OS's.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lock{f: f}, nil
}

// unlock releases the lock.
func (l *lock) unlock() { l.f.Close() }
