package main

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind, then removes the
// zbstream binary that buildServe built for the tests that run it as a
// process of its own.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if serveBin != "" {
			os.RemoveAll(filepath.Dir(serveBin))
		}
		os.Exit(code)
	}))
}
