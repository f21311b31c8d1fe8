package main

import (
	"context"
	"errors"
	"io"
)

// runIngest is the ingest command (not built yet).
func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("ingest: not built yet")
}
