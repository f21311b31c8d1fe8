package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
)

// errHelp: the user asked for a command's help; it was printed.
var errHelp = flag.ErrHelp

// newFlags returns a flag set for a subcommand that reports errors instead
// of exiting, and prints usage (a synopsis, then the flags) to stderr.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("zbstream "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: zbstream %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; a bad flag is a usage error (exit 2), -h is help
// (exit 0), and stray positional arguments are refused unless allowed.
func parseFlags(fs *flag.FlagSet, args []string, positional bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return withCode(exitUsage, err)
	}
	if !positional && fs.NArg() > 0 {
		fs.Usage()
		return withCode(exitUsage, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	return nil
}

// usageErr is a usage error with a message.
func usageErr(format string, a ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, a...))
}

// tlsFlagHint names the flag that fixes a TLS mistake; caFlag is the
// command's flag for a CA file.
func tlsFlagHint(m zbstream.TLSMistake, caFlag string) string {
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

// clientErr gives a client error its exit code: refused credentials or
// table, an unreachable server, or a plain failure. A TLS mistake is a
// usage error (the flags do not match the server) and gets the flag that
// fixes it.
func clientErr(err error) error { return clientErrCA(err, "-ca-file") }

// clientErrCA is clientErr for a command whose CA file flag is caFlag.
func clientErrCA(err error, caFlag string) error {
	if err == nil {
		return nil
	}
	var ce *zbstream.ConnectionError
	var cfg *zbstream.ConfigError
	var te *zbstream.TLSError
	switch {
	case errors.As(err, &cfg):
		return withCode(exitUsage, err)
	case errors.As(err, &te):
		return withCode(exitUsage, core.Errorf("%w (%s)", err, tlsFlagHint(te.Mistake, caFlag)))
	case errors.As(err, &ce) && (ce.Code == core.CodeUnauthenticated || ce.Code == core.CodePermissionDenied):
		return withCode(exitAuth, err)
	case errors.As(err, &ce) && (ce.Code == core.CodeUnavailable || ce.Code == core.CodeDeadlineExceeded):
		return withCode(exitUnreachable, core.Errorf("server unreachable: %w", err))
	}
	return withCode(exitFailure, err)
}

// parseFlagsAnywhere parses args in which flags may also follow the
// positional arguments ("FILE -token x"), which Go's flag package alone
// would take for more positional arguments, silently ignoring the flags.
// A "--" ends the flags: what follows it is positional. It returns the
// positional arguments.
func parseFlagsAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args, true); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
