package zbstream

import (
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
	streamio "github.com/zbstream/zbstream/io"
)

// The errors a stream returns, re-exported from the packages that define
// them so that one import is enough: they are the same values, and
// errors.Is and errors.As work with either name.
var (
	// ErrClosed: the stream was closed and takes no new records.
	ErrClosed = core.ErrClosed
	// ErrStreamFailed wraps the terminal error returned to calls made after
	// the stream failed.
	ErrStreamFailed = core.ErrStreamFailed
	// ErrRecordType: a record of the wrong type for the stream (JSON into a
	// proto stream, or a proto message of another type).
	ErrRecordType = core.ErrRecordType
	// ErrCallTooLarge: one ingest call is over the per-call limit.
	ErrCallTooLarge = core.ErrCallTooLarge
	// ErrInvalidConfig is wrapped by every *ConfigError.
	ErrInvalidConfig = core.ErrInvalidConfig
	// ErrProtocol is wrapped by every *ProtocolError: the server broke the
	// protocol, and the stream failed.
	ErrProtocol = core.ErrProtocol
	// ErrRetriesExhausted is wrapped by *RetryError.
	ErrRetriesExhausted = core.ErrRetriesExhausted
	// ErrOffsetSpaceExhausted: the next offset would overflow int64.
	ErrOffsetSpaceExhausted = core.ErrOffsetSpaceExhausted
	// ErrOpenTimeout: an open attempt got no answer within the open timeout.
	ErrOpenTimeout = core.ErrOpenTimeout
	// ErrAckTimeout: no acknowledgement advanced within the ack timeout.
	ErrAckTimeout = core.ErrAckTimeout
	// ErrCloseTimeout: Close could not make every record durable in time.
	ErrCloseTimeout = core.ErrCloseTimeout
	// ErrFlushTimeout: Flush timed out; the stream goes on.
	ErrFlushTimeout = streamio.ErrFlushTimeout
	// ErrNeverAssigned: Wait for an offset no call was given.
	ErrNeverAssigned = streamio.ErrNeverAssigned
	// ErrCallbackPanic is wrapped by *CallbackPanicError.
	ErrCallbackPanic = streamio.ErrCallbackPanic
)

// Error types, for errors.As.
type (
	// ConfigError names an invalid option or config field.
	ConfigError = core.ConfigError
	// LimitError reports a call refused by a size limit.
	LimitError = core.LimitError
	// ProtocolError is a server message that broke a protocol rule.
	ProtocolError = core.ProtocolError
	// ConnectionError is a connection's failure with its gRPC status code;
	// the gRPC status error is its cause (status.FromError works on it).
	ConnectionError = core.ConnectionError
	// RetryError reports that recovery gave up.
	RetryError = core.RetryError
	// CallbackPanicError is the cause a stream fails with when a callback
	// panics.
	CallbackPanicError = streamio.CallbackPanicError
	// TLSError is an open that failed because the client and the server
	// disagree about TLS: an untrusted certificate, one for another host
	// name, an http:// endpoint for a TLS server or a TLS one for a
	// plaintext server. It comes inside a *ConnectionError (UNAVAILABLE,
	// as gRPC reports it), is never retried, and its message says what to
	// change.
	TLSError = grpcio.TLSError
	// TLSMistake names the disagreement of a TLSError.
	TLSMistake = grpcio.TLSMistake
)

// The TLS mistakes a TLSError reports.
const (
	// UntrustedCertificate: the server's certificate chains to no trusted
	// CA (see WithCAFile).
	UntrustedCertificate = grpcio.UntrustedCertificate
	// HostnameMismatch: the certificate is not valid for the endpoint's
	// host name.
	HostnameMismatch = grpcio.HostnameMismatch
	// PlaintextToTLS: an http:// endpoint, but the server speaks TLS.
	PlaintextToTLS = grpcio.PlaintextToTLS
	// TLSToPlaintext: a TLS endpoint, but the server speaks plaintext.
	TLSToPlaintext = grpcio.TLSToPlaintext
)
