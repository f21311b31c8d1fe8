package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// commandPath is the zbstream command's import path: tests build it from
// whatever directory they run in.
const commandPath = "github.com/zbstream/zbstream/cmd/zbstream"

// The binary Binary builds, once per test binary; Main removes it.
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// Binary builds the zbstream command once per test binary and returns its
// path: for tests that run it as a process of its own (the demo's children
// are the same binary; crash tests kill real processes). It skips the test
// when no go command is on PATH.
func Binary(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to build zbstream with")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zbstream-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "zbstream")
		out, err := exec.Command(goBin, "build", "-o", binPath, commandPath).CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build %s: %v\n%s", commandPath, err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// Main is TestMain for the command's test binaries: it checks that no test
// leaves a goroutine behind, then removes the binary Binary built.
func Main(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if binPath != "" {
			os.RemoveAll(filepath.Dir(binPath))
		}
		os.Exit(code)
	}))
}
