package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// sizeFlags are the byte-size flags of every subcommand; each package
// checks its own with clitest.CheckSizeFlags.
var sizeFlags = []string{"bench -record-size", "bench -sizes", "bench -volume", "demo -record-size", "ingest -batch-bytes",
	"serve -receive-budget", "serve -max-message-bytes"}

// TestSizeFlagsHelp: the flags whose help says bytes are the size flags
// above, and each gives the rule of units.
func TestSizeFlagsHelp(t *testing.T) {
	subs := map[string][]string{"streams": {"list", "show", "records", "retire"}, "spool": {"check", "repair"}}
	want, got := slices.Clone(sizeFlags), []string(nil)
	for _, c := range commands() {
		for _, sub := range append(subs[c.name], "") {
			args := slices.DeleteFunc([]string{c.name, sub, "-h"}, func(s string) bool { return s == "" })
			var out bytes.Buffer
			if code := run(t.Context(), args, &out, &out); code != cli.ExitOK {
				t.Fatalf("%s: exit %d\n%s", args, code, out.String())
			}
			for name, usage := range helpFlags(out.String()) {
				if strings.Contains(usage, "bytes") && !strings.Contains(usage, cli.SizeUnits) {
					t.Errorf("%s -%s says bytes but not %q: %q", c.name, name, cli.SizeUnits, usage)
				}
				if strings.Contains(usage, cli.SizeUnits) {
					got = append(got, c.name+" -"+name)
				}
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("flags with the size rule in their help: %q, want %q", got, want)
	}
}

// helpFlags returns the usage of each flag in help printed by
// flag.PrintDefaults.
func helpFlags(help string) map[string]string {
	flags := map[string]string{}
	var name string
	for line := range strings.SplitSeq(help, "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			name = strings.Fields(line)[0][1:]
			flags[name] = ""
		case strings.HasPrefix(line, "    \t") && name != "":
			flags[name] += strings.TrimSpace(line) + " "
		}
	}
	return flags
}
