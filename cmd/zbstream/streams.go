package main

import (
	"context"
	"errors"
	"io"
)

// runStreams is the streams command (not built yet).
func runStreams(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("streams: not built yet")
}
