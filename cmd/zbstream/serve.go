package main

import (
	"context"
	"errors"
	"io"
)

// runServe is the serve command (not built yet).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("serve: not built yet")
}
