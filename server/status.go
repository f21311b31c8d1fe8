package server

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errSuperseded ends a connection fenced by a newer resume (or repeated
// create) of its stream.
var errSuperseded = status.Error(codes.Aborted, "superseded by a newer connection to the stream")

// errRetiring fences the live writer of a stream that RetireStream is
// retiring.
var errRetiring = status.Error(codes.Aborted, "stream is being retired")

func errRetired(id string) error {
	return status.Errorf(codes.NotFound, "stream %q is retired", clip(id))
}

// errNotFound is the one answer for a stream id that does not exist or
// belongs to another principal (see owns): the two are indistinguishable.
func errNotFound(id string) error {
	return status.Errorf(codes.NotFound, "stream %q not found", clip(id))
}

func invalid(format string, a ...any) error {
	return status.Errorf(codes.InvalidArgument, format, a...)
}

func kindName(k StreamKind) string {
	switch k {
	case KindEphemeral:
		return "ephemeral"
	case KindPersistent:
		return "persistent"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// storeStatus maps a Store error to a status.
func storeStatus(err error) error {
	switch {
	case errors.Is(err, ErrStreamNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrStoreClosed):
		return status.Error(codes.Unavailable, "store closed")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	return status.Errorf(codes.Internal, "store: %v", err)
}

// recvStatus maps an error of Recv to the status that ends the call; a
// clean end of the client's side maps to nil. (A message over
// Options.MaxMessageBytes arrives as malformed, see serverCodec; only one
// over gRPC's own limit, 4x that, ends in RESOURCE_EXHAUSTED from gRPC.)
func recvStatus(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	if _, ok := status.FromError(err); !ok {
		return status.FromContextError(err).Err()
	}
	return err
}

func faultStatus(f Fault, def codes.Code, defMsg string) error {
	code, msg := f.Code, f.Message
	if code == codes.OK {
		code = def
	}
	if msg == "" {
		msg = defMsg
	}
	return status.Error(code, msg)
}
