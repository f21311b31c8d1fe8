//go:build !unix

package proc

import "os"

// PeakRSS is not available here: bench -rss reports that it cannot
// measure.
func PeakRSS(*os.ProcessState) (int64, bool) { return 0, false }

// CurrentRSS is not available here: bench -rss leaves the baseline out.
func CurrentRSS() (int64, bool) { return 0, false }
