package e2e_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
)

// startChild starts this test binary again as a child process, with args
// (which test it runs) and env added to this process's environment. Its
// stderr goes to stderr; its stdout, line by line, to the returned
// scanner, which the caller reads (or drains) so that the child never
// blocks on it.
func startChild(args []string, env []string, stderr io.Writer) (*exec.Cmd, *bufio.Scanner, error) {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return cmd, bufio.NewScanner(out), nil
}
