package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// ErrHelp: the user asked for a command's help; it was printed.
var ErrHelp = flag.ErrHelp

// NewFlags returns a flag set for a subcommand that reports errors instead
// of exiting, and prints usage (a synopsis, then the flags) to stderr.
func NewFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("zbstream "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: zbstream %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args, flags first; a bad flag is a usage error (ExitUsage),
// -h is ErrHelp, and positional arguments are refused unless allowed.
func Parse(fs *flag.FlagSet, args []string, positional bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ErrHelp
		}
		return WithCode(ExitUsage, err)
	}
	if !positional && fs.NArg() > 0 {
		fs.Usage()
		return WithCode(ExitUsage, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	return nil
}

// ParseAnywhere parses args in which flags may also follow or sit between
// the positional arguments ("FILE -token x", "show ID -json"), which Go's
// flag package alone would take for more positional arguments, silently
// ignoring the flags. A "--" ends the flags: what follows it is
// positional. It returns the positional arguments.
func ParseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := Parse(fs, args, true); err != nil {
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
