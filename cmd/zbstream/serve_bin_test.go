package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	serveBinOnce sync.Once
	serveBin     string
	serveBinErr  error
)

// buildServe builds the zbstream command once per test run.
func buildServe(t testing.TB) string {
	t.Helper()
	serveBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zbstream-bin")
		if err != nil {
			serveBinErr = err
			return
		}
		serveBin = filepath.Join(dir, "zbstream")
		out, err := exec.Command("go", "build", "-o", serveBin, ".").CombinedOutput()
		if err != nil {
			serveBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if serveBinErr != nil {
		t.Fatal(serveBinErr)
	}
	return serveBin
}
