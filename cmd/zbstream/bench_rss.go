package main

import (
	"context"
	"errors"
	"io"
)

const envBenchRole = "ZBSTREAM_BENCH_ROLE"

func benchRSSChild(ctx context.Context, stdout io.Writer) error { return errors.New("todo") }

func benchRSS(ctx context.Context, cfg benchConfig, stdout, stderr io.Writer) error {
	return errors.New("todo")
}
