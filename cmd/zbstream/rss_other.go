//go:build !unix

package main

import "os"

// peakRSS is not available here: bench -rss reports that it cannot
// measure.
func peakRSS(*os.ProcessState) (int64, bool) { return 0, false }
