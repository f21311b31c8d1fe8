package grpcio

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/core"
)

// Classify maps an error of a gRPC call to the core's status code: the one
// place where gRPC errors are judged. A gRPC status keeps its code, io.EOF
// (a clean end of the call) is CodeOK, a context's end is CodeCanceled or
// CodeDeadlineExceeded, a *core.ConnectionError keeps its own code, and
// anything else is CodeUnknown (retryable).
func Classify(err error) core.Code {
	var ce *core.ConnectionError
	switch {
	case err == nil:
		return core.CodeOK
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, io.EOF):
		return core.CodeOK
	}
	if st, ok := status.FromError(err); ok {
		return core.Code(st.Code())
	}
	switch {
	case errors.Is(err, context.Canceled):
		return core.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return core.CodeDeadlineExceeded
	}
	return core.CodeUnknown
}

// connErr wraps a call's error with its classification, keeping the gRPC
// status as the cause (reachable with errors.As and status.FromError).
func connErr(err error) error {
	var ce *core.ConnectionError
	if errors.As(err, &ce) {
		return err
	}
	return &core.ConnectionError{Code: Classify(err), Err: err}
}
