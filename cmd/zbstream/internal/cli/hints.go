package cli

import (
	"errors"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
)

// TLSHint names the flag that fixes a TLS mistake; caFlag is the
// command's flag for a CA file.
func TLSHint(m zbstream.TLSMistake, caFlag string) string {
	switch m {
	case zbstream.UntrustedCertificate:
		return "give the server's CA certificate with " + caFlag
	case zbstream.HostnameMismatch:
		return "give -endpoint a host name the certificate is for"
	case zbstream.PlaintextToTLS:
		return "give -endpoint an https:// URL"
	}
	return "give -endpoint an http:// URL"
}

// ClientErr gives a client error its exit code: refused credentials or
// table (ExitAuth), an unreachable server (ExitUnreachable), or a plain
// failure. A bad configuration, or a TLS mistake (the flags do not match
// the server), is a usage error, and a TLS mistake gets the flag that
// fixes it; caFlag is the command's flag for a CA file.
func ClientErr(err error, caFlag string) error {
	if err == nil {
		return nil
	}
	var ce *zbstream.ConnectionError
	var cfg *zbstream.ConfigError
	var te *zbstream.TLSError
	switch {
	case errors.As(err, &cfg):
		return WithCode(ExitUsage, err)
	case errors.As(err, &te):
		return WithCode(ExitUsage, core.Errorf("%w (%s)", err, TLSHint(te.Mistake, caFlag)))
	case errors.As(err, &ce) && (ce.Code == core.CodeUnauthenticated || ce.Code == core.CodePermissionDenied):
		return WithCode(ExitAuth, err)
	case errors.As(err, &ce) && (ce.Code == core.CodeUnavailable || ce.Code == core.CodeDeadlineExceeded):
		return WithCode(ExitUnreachable, core.Errorf("server unreachable: %w", err))
	}
	return WithCode(ExitFailure, err)
}
