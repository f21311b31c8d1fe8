package zerobus

import (
	"strings"
	"unicode/utf8"
)

// sdkOptions holds what the SdkOption values set.
type sdkOptions struct {
	applicationName string
	// connectionPerStream is nil when no option set it: the default, on.
	connectionPerStream *bool
}

// SdkOption configures an SDK made by NewZerobusSdkWithOptions. The
// options of this package are WithApplicationName and
// WithConnectionPerStream; a nil SdkOption is skipped.
type SdkOption func(*sdkOptions)

// WithApplicationName names the application to the server: the name, with
// surrounding white space removed, travels in the user-agent and
// x-zerobus-sdk headers of every stream, beside zbstream's own name and
// version ("my-app/1.0 zbstream/<version>"). An empty or blank name is
// ignored. The last WithApplicationName given wins.
//
// NewZerobusSdkWithOptions refuses, with a non-retryable *ZerobusError, a
// name that holds a NUL byte, is not valid UTF-8, or has a character other
// than printable ASCII (what a header value may carry here).
func WithApplicationName(name string) SdkOption {
	name = strings.TrimSpace(name)
	return func(o *sdkOptions) { o.applicationName = name }
}

// WithConnectionPerStream chooses whether each stream of the SDK has a
// gRPC connection of its own (true, the default, as in the official SDK
// since v1.7.0) or the streams share one (false): one connection per set
// of credentials, since a zbstream client authenticates all its streams
// alike. A dedicated connection is made when its stream is created and
// closed when the stream is closed. The last WithConnectionPerStream given
// wins.
func WithConnectionPerStream(enabled bool) SdkOption {
	return func(o *sdkOptions) { o.connectionPerStream = &enabled }
}

// NewZerobusSdkWithOptions returns an SDK as NewZerobusSdk does, configured
// by opts (WithApplicationName, WithConnectionPerStream). Nothing is dialed
// yet. A malformed endpoint or an application name that cannot travel in a
// header is a non-retryable *ZerobusError.
func NewZerobusSdkWithOptions(zerobusEndpoint string, unityCatalogURL string, opts ...SdkOption) (*ZerobusSdk, error) {
	var o sdkOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := checkApplicationName(o.applicationName); err != nil {
		return nil, err
	}
	return newSdk(zerobusEndpoint, unityCatalogURL, o)
}

// checkApplicationName refuses the names the official SDK refuses with the
// same messages (a NUL byte, invalid UTF-8); the zbstream client refuses
// the rest that cannot travel in a header (see newSdk).
func checkApplicationName(name string) error {
	switch {
	case strings.IndexByte(name, 0) >= 0:
		return fatal("application name must not contain a NUL byte")
	case !utf8.ValidString(name):
		return fatal("application name must be valid UTF-8")
	}
	return nil
}

// perStream reports whether streams get a connection of their own.
func (o sdkOptions) perStream() bool {
	return o.connectionPerStream == nil || *o.connectionPerStream
}
