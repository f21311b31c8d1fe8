package core

import "strconv"

// Code is a transport status code. The values are gRPC's, so that an adapter
// converts with a plain type conversion, but the core imports nothing of gRPC.
type Code uint32

// Status codes, numbered as in gRPC.
const (
	CodeOK                 Code = 0
	CodeCanceled           Code = 1
	CodeUnknown            Code = 2
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeNotFound           Code = 5
	CodeAlreadyExists      Code = 6
	CodePermissionDenied   Code = 7
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeAborted            Code = 10
	CodeOutOfRange         Code = 11
	CodeUnimplemented      Code = 12
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
	CodeDataLoss           Code = 15
	CodeUnauthenticated    Code = 16
)

var codeNames = [...]string{
	"OK", "CANCELED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "CODE(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// Retryable reports whether a failure with this code may be recovered by
// reconnecting. The non-retryable codes are the ones no reconnect can fix:
// the request, the credentials or the stream itself is wrong. Every other
// code, a clean end of stream (CodeOK) included, is retryable.
func (c Code) Retryable() bool {
	switch c {
	case CodeInvalidArgument, CodeUnauthenticated, CodePermissionDenied,
		CodeOutOfRange, CodeUnimplemented, CodeNotFound:
		return false
	}
	return true
}
