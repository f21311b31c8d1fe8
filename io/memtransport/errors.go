package memtransport

import (
	"context"
	"errors"

	"github.com/zbstream/zbstream/core"
)

// Errors are *core.ConnectionError values with the status code a gRPC
// server (or client, for the client's own end) would give.
var (
	errAborted   = &core.ConnectionError{Code: core.CodeCanceled, Err: errors.New("memtransport: connection aborted")}
	errSendAfter = connError(core.CodeInternal, "Send called after CloseSend")
	// errFenced ends a connection whose stream was taken by a newer one.
	errFenced = connError(core.CodeAborted, "superseded by a newer connection to the stream")
)

// connError is the *core.ConnectionError of a status.
func connError(code core.Code, msg string) error {
	return &core.ConnectionError{Code: code, Err: statusError{code, msg}}
}

// statusError is the message of a status, as a gRPC status error reads.
type statusError struct {
	code core.Code
	msg  string
}

func (e statusError) Error() string { return "memtransport: " + e.code.String() + ": " + e.msg }

// ctxError is the end of a connection whose context is done.
func ctxError(ctx context.Context) error {
	err := ctx.Err()
	code := core.CodeCanceled
	if errors.Is(err, context.DeadlineExceeded) {
		code = core.CodeDeadlineExceeded
	}
	return &core.ConnectionError{Code: code, Err: err}
}
