// Command zbstream is the command-line face of zbstream: a demo that proves
// exactly-once delivery under real faults, the reference server, a
// resumable ingester for JSON-lines and protobuf files, stream inspection,
// a benchmark against raw gRPC, and the check and repair of a spool.
//
// Usage:
//
//	zbstream demo     [flags]   run the exactly-once demo (no flags needed)
//	zbstream serve    [flags]   run the reference server
//	zbstream ingest   [flags]   ingest a file, exactly once, resumably
//	zbstream streams  [flags]   list, show, print or retire streams
//	zbstream bench    [flags]   the client beside raw gRPC, as a table, CSV and SVG
//	zbstream spool    [flags]   check a spool directory, or move its damage aside
//	zbstream version            print the version of this build
//
// Run "zbstream <command> -h" for a command's flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/bench"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/demo"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/ingest"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/serve"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/spoolcmd"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/streams"
)

// command is one subcommand: run parses args and does the work; its error,
// if any, carries an exit code (cli.ExitError). Each command is a package
// under internal/ of its own.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"demo", "run the exactly-once demo: faults, SIGKILLs, verification", demo.Run},
		{"serve", "run the reference Zerobus-compatible server", serve.Run},
		{"ingest", "ingest a JSON-lines or protobuf file exactly once, resumably", ingest.Run},
		{"streams", "list, show, print or retire a server's streams", streams.Run},
		{"bench", "benchmark the client beside raw gRPC", bench.Run},
		{"spool", "check a spool directory, or move its damage aside", spoolcmd.Run},
		{"version", "print the module version, the Go version and the VCS commit", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the process's exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return cli.ExitUsage
		}
		return cli.ExitOK
	}
	name := args[0]
	if name == "-version" || name == "--version" {
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name {
			return cli.Exit(c.run(ctx, args[1:], stdout, stderr), stderr)
		}
	}
	fmt.Fprintf(stderr, "zbstream: unknown command %q\n\n", args[0])
	usage(stderr)
	return cli.ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: zbstream <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun \"zbstream <command> -h\" for a command's flags.")
}
