//go:build !unix

package server_test

import (
	"testing"
	"time"
)

// processCPU is not measured here: the cpu-ns/record metric reads 0.
func processCPU(*testing.B) time.Duration { return 0 }
