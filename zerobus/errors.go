package zerobus

import (
	"context"
	"errors"
	"fmt"

	"github.com/zbstream/zbstream"
)

// ZerobusError is the error of every call of this package, as in the
// official SDK. IsRetryable gives the official SDK's answer: whether the
// failure is of a kind a reconnect may cure (a network failure, a timeout,
// a server that ended the stream with a retryable status), not whether this
// stream can still be used. Errors from NewZerobusSdk, CreateStream and
// CreateStreamWithHeadersProvider are never retryable, as in the official
// SDK.
//
// Beyond the official type, a ZerobusError that comes from the zbstream
// client unwraps to its error, so errors.Is and errors.As reach
// *zbstream.ConnectionError, zbstream.ErrStreamFailed and the rest.
type ZerobusError struct {
	// Message describes the failure.
	Message string
	// IsRetryable is the official SDK's retryability of the failure.
	IsRetryable bool

	err error // the zbstream error, when there is one
}

// Error returns "ZerobusError: <message>", or "ZerobusError (retryable):
// <message>" for a retryable failure, as the official SDK does.
func (e *ZerobusError) Error() string {
	if e.IsRetryable {
		return fmt.Sprintf("ZerobusError (retryable): %s", e.Message)
	}
	return "ZerobusError: " + e.Message
}

// Retryable reports IsRetryable.
func (e *ZerobusError) Retryable() bool { return e.IsRetryable }

// Unwrap returns the zbstream error behind e, or nil.
func (e *ZerobusError) Unwrap() error { return e.err }

// fatal is a non-retryable ZerobusError with a message of this package.
func fatal(msg string) error { return &ZerobusError{Message: msg} }

// Messages the official SDK uses for the same failures.
const (
	msgFreed        = "SDK has been freed"
	msgClosed       = "Stream has been closed"
	msgPayloadType  = "Invalid payload type: must be []byte or string"
	msgTypeMismatch = "Invalid argument: Record type does not match stream configuration."
	msgEmptyData    = "empty data"
	msgActive       = "Stream is in invalid state: Cannot get unacked records from an active stream. Stream must be closed first."
	msgNoDescriptor = "Invalid argument: Proto descriptor is required for Proto record type."
	msgNoRecordType = "Invalid argument: Record type is not specified."
	// msgAvroNeedsSchema: RecordTypeAvro given to CreateStream, which has
	// no schema to send.
	msgAvroNeedsSchema = "Invalid argument: an Avro stream needs its writer schema: create it with CreateAvroStream (the avro build tag)."
	msgNoProvider      = "Invalid argument: the headers provider is nil."
)

// wrapCreate converts an error of stream creation: never retryable, as the
// official SDK reports every creation failure.
func wrapCreate(err error) error {
	if err == nil {
		return nil
	}
	var ze *ZerobusError
	if errors.As(err, &ze) {
		return &ZerobusError{Message: ze.Message, err: ze.err}
	}
	return &ZerobusError{Message: err.Error(), err: err}
}

// wrap converts an error of an open stream, with the official SDK's
// retryability for its kind.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	var ze *ZerobusError
	if errors.As(err, &ze) {
		return err
	}
	if errors.Is(err, zbstream.ErrClosed) {
		return &ZerobusError{Message: msgClosed, err: err}
	}
	return &ZerobusError{Message: err.Error(), IsRetryable: retryable(err), err: err}
}

// retryable classifies a zbstream error as the official SDK classifies the
// same failure: by gRPC status code for a connection's failure (INVALID_ARGUMENT,
// UNAUTHENTICATED, PERMISSION_DENIED, OUT_OF_RANGE, UNIMPLEMENTED and
// NOT_FOUND are not retryable, every other code is); timeouts and a server
// that broke the protocol are retryable; misuse and configuration errors
// are not.
func retryable(err error) bool {
	var ce *zbstream.ConnectionError
	var pe *zbstream.ProtocolError
	switch {
	case errors.As(err, &ce):
		return ce.Code.Retryable()
	case errors.As(err, &pe), errors.Is(err, zbstream.ErrProtocol): // the second: an Arrow stream's
		return true
	case errors.Is(err, zbstream.ErrOpenTimeout), errors.Is(err, zbstream.ErrAckTimeout),
		errors.Is(err, zbstream.ErrFlushTimeout), errors.Is(err, zbstream.ErrCloseTimeout),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}
