package io

import (
	"context"
	"errors"
	"fmt"
	stdio "io"

	"github.com/zbstream/zbstream/core"
)

// Errors of the driver itself. The core's errors (core.ErrClosed,
// core.ErrWindowFull, *core.ProtocolError, ...) pass through unchanged.
var (
	// ErrFlushTimeout: Flush waited Options.FlushTimeout without every
	// earlier record becoming durable. The stream goes on.
	ErrFlushTimeout = errors.New("zbstream: flush timed out")
	// ErrNeverAssigned: Wait was asked for an offset no call has been given.
	ErrNeverAssigned = errors.New("zbstream: offset was never assigned")
	// ErrCallbackPanic is wrapped by *CallbackPanicError.
	ErrCallbackPanic = errors.New("zbstream: callback panicked")
)

// CallbackPanicError is the cause a stream fails with when an
// acknowledgement callback panics: the process goes on, the stream does not.
type CallbackPanicError struct {
	Offset int64 // the offset whose callback panicked
	Value  any   // what it panicked with
}

func (e *CallbackPanicError) Error() string {
	if err, ok := e.Value.(error); ok {
		return fmt.Sprintf("zbstream: callback for offset %d panicked: %s", e.Offset, core.Unprefixed(err))
	}
	return fmt.Sprintf("zbstream: callback for offset %d panicked: %v", e.Offset, e.Value)
}

// Unwrap makes errors.Is(err, ErrCallbackPanic) hold, and exposes the panic
// value when it is an error.
func (e *CallbackPanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrCallbackPanic, err}
	}
	return []error{ErrCallbackPanic}
}

// codeOf classifies a transport error for the core. Transports should
// return *core.ConnectionError; for a plain error, io.EOF is a clean end,
// a context's end keeps its code, and anything else is CodeUnknown (which
// is retryable).
func codeOf(err error) core.Code {
	var ce *core.ConnectionError
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, stdio.EOF):
		return core.CodeOK
	case errors.Is(err, context.Canceled):
		return core.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return core.CodeDeadlineExceeded
	}
	return core.CodeUnknown
}

// failed wraps a stream's terminal error for calls made after it.
func failed(err error) error { return core.Errorf("%w: %w", core.ErrStreamFailed, err) }
