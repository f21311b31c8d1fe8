package grpcio

// The metadata of a call that opens a stream: the same for the
// transport's own streams and for stream kinds built beside it over the
// same connection (the Arrow Flight streams of module arrowstream).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/zbstream/zbstream/core"
)

// OutgoingContext returns ctx carrying the metadata of a call into table:
// headers' metadata (nil: none), the table (HeaderTable) and, when sdk is
// not empty, the SDK (HeaderSDK). A provider may send the table header
// itself, as the official SDKs' providers do: the same table is sent
// once, another one is a *core.ConfigError (inside a non-retryable
// INVALID_ARGUMENT *core.ConnectionError) and nothing is sent. A
// provider's error is a *core.ConnectionError: its own, or
// UNAUTHENTICATED (not retried) around it, or the status of ctx's end when
// ctx ended.
func OutgoingContext(ctx context.Context, headers HeadersProvider, table, sdk string) (context.Context, error) {
	kv := make([]string, 0, 6)
	if headers != nil {
		h, err := headers.Headers(ctx)
		if err != nil {
			var ce *core.ConnectionError
			code := core.CodeUnauthenticated
			switch {
			case errors.As(err, &ce):
				return nil, err
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				code = Classify(err) // the open was abandoned, not refused
			}
			return nil, &core.ConnectionError{Code: code, Err: core.Errorf("credentials: %w", err)}
		}
		for k, v := range h {
			// gRPC metadata keys are case-insensitive (it lowercases
			// them): compare them so.
			if strings.ToLower(k) == HeaderTable {
				if v != table {
					return nil, &core.ConnectionError{Code: core.CodeInvalidArgument, Err: &core.ConfigError{
						Field:  "HeadersProvider",
						Reason: fmt.Sprintf("sends the %s header %q for a stream of table %q", HeaderTable, v, table),
					}}
				}
				continue // sent below, once
			}
			kv = append(kv, k, v)
		}
	}
	kv = append(kv, HeaderTable, table)
	if sdk != "" {
		kv = append(kv, HeaderSDK, sdk)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...), nil
}
