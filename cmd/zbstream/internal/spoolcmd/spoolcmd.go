package spoolcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/spool"
)

const usage = `Usage: zbstream spool <subcommand> [flags] DIR

Subcommands:
  check DIR    report a spool's segments, entries and offsets, and any damage
               Open refuses (segment, byte, offsets at stake); exit 0 when
               clean, 1 when damaged
  repair DIR   move the first damage aside (NAME.damaged: renamed, never
               deleted) with every later segment, keep the intact entries
               before it, and say which offsets that puts at stake

A spool's directory is locked while a process uses it: stop the process
first. See the spool package's doc for what damage is and what a repair
costs.
`

// Run is the spool command: check or repair a spool directory.
func Run(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return cli.UsageErr("spool: missing subcommand (check or repair)")
	}
	sub := args[0]
	switch sub {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, usage)
		return cli.ErrHelp
	case "check", "repair":
	default:
		fmt.Fprint(stderr, usage)
		return cli.UsageErr("spool: unknown subcommand %q", sub)
	}
	fs := cli.NewFlags("spool "+sub, "spool "+sub+" [flags] DIR", stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := cli.ParseAnywhere(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return cli.UsageErr("spool %s: want one spool directory, got %d arguments", sub, len(pos))
	}
	dir := pos[0]
	if sub == "check" {
		return check(dir, *asJSON, stdout)
	}
	return repair(dir, *asJSON, stdout)
}

// spoolErr gives a spool error its exit code: damage 1 (cli.ExitFailure),
// a directory that cannot be read as a spool 3 (cli.ExitInput).
func spoolErr(err error) error {
	if errors.Is(err, spool.ErrCorrupt) || errors.Is(err, spool.ErrLocked) {
		return cli.WithCode(cli.ExitFailure, err)
	}
	return cli.WithCode(cli.ExitInput, err)
}

func check(dir string, asJSON bool, stdout io.Writer) error {
	r, err := spool.Check(dir)
	if err != nil {
		return spoolErr(err)
	}
	if asJSON {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return err
		}
	} else {
		printReport(stdout, r)
	}
	if !r.Clean() {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("spool %s is damaged (%d damaged places): Open refuses it; \"zbstream spool repair %s\" moves the damage aside", dir, len(r.Damage), dir))
	}
	return nil
}

func printReport(w io.Writer, r *spool.Report) {
	fmt.Fprintf(w, "spool %s: %d segments, %d intact entries, offsets %s\n", r.Dir, len(r.Segments), r.Entries, r.Offsets)
	for _, s := range r.Segments {
		state := ""
		if s.Damaged {
			state = "  DAMAGED"
		}
		fmt.Fprintf(w, "  %s  offsets %s  %d intact entries  %d bytes%s\n", filepath.Base(s.File),
			spool.Offsets{First: s.First, Count: int64(s.Entries)}, s.Entries, s.Bytes, state)
	}
	if r.TornBytes > 0 {
		fmt.Fprintf(w, "torn tail: %d bytes after the last entry (a write a crash interrupted, whose calls never returned): the next Open cuts them\n", r.TornBytes)
	}
	if r.Repaired.Count > 0 {
		fmt.Fprintf(w, "repaired: offsets %s were moved aside; the next Open continues after the server's watermark and reports those the server does not hold as lost\n", r.Repaired)
	}
	for _, d := range r.Damage {
		fmt.Fprintf(w, "damage: %s at byte %d: %s; offsets %s at stake\n", filepath.Base(d.File), d.Offset, d.Reason, d.AtStake)
	}
	if r.Clean() {
		fmt.Fprintln(w, "clean: Open accepts this log")
	}
}

func repair(dir string, asJSON bool, stdout io.Writer) error {
	r, err := spool.Repair(dir)
	if err != nil {
		return spoolErr(err)
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(r)
	}
	if r.Damage == nil {
		fmt.Fprintf(stdout, "spool %s: nothing to repair, Open accepts this log\n", dir)
		return nil
	}
	d := r.Damage
	fmt.Fprintf(stdout, "spool %s: repaired the damage in %s at byte %d: %s\n", dir, filepath.Base(d.File), d.Offset, d.Reason)
	for _, m := range r.Moved {
		fmt.Fprintf(stdout, "moved aside: %s\n", m)
	}
	fmt.Fprintf(stdout, "kept: offsets %s (the intact entries before the damage)\n", r.Kept)
	fmt.Fprintf(stdout, "at stake: offsets %s. Those the server already holds are safe; the others are lost.\n", r.AtStake)
	fmt.Fprintln(stdout, "The next Open continues after the server's watermark, reports the lost offsets (Stats.Lost), and gives them to new calls again.")
	return nil
}
