package main

import (
	"bytes"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// sizeFlags are the byte-size flags of every subcommand, with the
// subcommand's flag set.
var sizeFlags = []struct {
	cmd   string
	flags func() *flag.FlagSet
	names []string
}{
	{"bench", func() *flag.FlagSet { fs, _ := benchFlags(io.Discard); return fs }, []string{"sizes", "volume"}},
	{"demo", func() *flag.FlagSet { fs, _ := demoFlags(io.Discard); return fs }, []string{"record-size"}},
	{"ingest", func() *flag.FlagSet { fs, _ := ingestFlagSet(io.Discard); return fs }, []string{"batch-bytes"}},
	{"serve", func() *flag.FlagSet { fs, _ := serveFlags(io.Discard); return fs }, []string{"receive-budget", "max-message-bytes"}},
}

// TestSizeFlags: every size flag of every subcommand reads a size the same
// way (cli.ParseByteSize: KB=1000, KiB=1024), and refuses a bad one with a
// usage error (exit 2) naming the flag.
func TestSizeFlags(t *testing.T) {
	for _, c := range sizeFlags {
		for _, name := range c.names {
			for _, tc := range []struct {
				in   string
				want int64
			}{
				{"1GB", 1_000_000_000}, {"1GiB", 1 << 30}, {"1.5MB", 1_500_000}, {"1.5KiB", 1536}, {"512", 512}, {"512B", 512}, {"2kb", 2000},
			} {
				fs := c.flags()
				if err := fs.Parse([]string{"-" + name, tc.in}); err != nil {
					t.Errorf("%s -%s %s: %v", c.cmd, name, tc.in, err)
					continue
				}
				if got, want := fs.Lookup(name).Value.String(), cli.FormatByteSize(tc.want); got != want {
					t.Errorf("%s -%s %s: %s, want %s (%d bytes)", c.cmd, name, tc.in, got, want, tc.want)
				}
			}
			for _, bad := range []string{"1.5.5MB", "10M", "-1", "10XB"} {
				var out, errb bytes.Buffer
				code := run(t.Context(), []string{c.cmd, "-" + name, bad}, &out, &errb)
				if msg := `invalid value "` + bad + `" for flag -` + name + ": "; code != cli.ExitUsage || !strings.Contains(errb.String(), msg) {
					t.Errorf("%s -%s %s: exit %d, want %d; stderr should contain %q:\n%s%s", c.cmd, name, bad, code, cli.ExitUsage, msg, out.String(), errb.String())
				}
			}
		}
	}
}

// TestSizeFlagsHelp: the flags whose help says bytes are the size flags
// above, and each gives the rule of units.
func TestSizeFlagsHelp(t *testing.T) {
	subs := map[string][]string{"streams": {"list", "show", "records", "retire"}, "spool": {"check", "repair"}}
	var want, got []string
	for _, c := range sizeFlags {
		for _, name := range c.names {
			want = append(want, c.cmd+" -"+name)
		}
	}
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
