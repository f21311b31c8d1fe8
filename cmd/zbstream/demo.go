package main

import (
	"context"
	"errors"
	"io"
)

// runDemo is the demo command (not built yet).
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("demo: not built yet")
}
