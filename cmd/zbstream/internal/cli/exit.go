package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zbstream/zbstream/core"
)

// Exit codes, distinct per kind of failure so that scripts can tell them
// apart.
const (
	ExitOK          = 0
	ExitFailure     = 1 // the work failed (a verification, a stream)
	ExitUsage       = 2 // bad flags or arguments
	ExitInput       = 3 // an input file is unreadable or malformed
	ExitUnreachable = 4 // the server cannot be reached
	ExitAuth        = 5 // the server refused the credentials or the table
	ExitInterrupted = 130
)

// ExitError is an error with the exit code it should end the process with.
type ExitError struct {
	Code int
	Err  error
}

// Error returns the wrapped error's message.
func (e *ExitError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *ExitError) Unwrap() error { return e.Err }

// WithCode attaches an exit code to err (nil stays nil).
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// UsageErr is a usage error (ExitUsage) with a message.
func UsageErr(format string, a ...any) error {
	return WithCode(ExitUsage, fmt.Errorf(format, a...))
}

// CodeOf returns the exit code err carries: ExitOK for nil or help, the
// code of an *ExitError, ExitInterrupted for a cancelled context, else
// ExitFailure.
func CodeOf(err error) int {
	var ee *ExitError
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitFailure
}

// Exit prints err (unless it is nil or help, already printed) and returns
// its exit code (CodeOf).
func Exit(err error, stderr io.Writer) int {
	code := CodeOf(err)
	if err != nil && !errors.Is(err, ErrHelp) {
		// The library's errors start with "zbstream: " (core.Prefix), and
		// so do the command's that wrap one (core.Errorf): say it once.
		fmt.Fprintln(stderr, "zbstream:", core.Unprefixed(err))
	}
	return code
}
