//go:build !unix

package e2e_test

import "time"

// processCPU is not measured here: the cpu-ns/record metric reads 0.
func processCPU() time.Duration { return 0 }
