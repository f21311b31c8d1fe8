package main

import (
	"context"
	"errors"
	"io"
)

// runBench is the bench command (not built yet).
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("bench: not built yet")
}
