package clitest

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// CheckSizeFlags checks the byte-size flags names of subcommand cmd, whose
// flag set newFlags returns: each reads a size as cli.ParseByteSize does
// (KB=1000, KiB=1024), and the command refuses a bad one with a usage
// error (exit 2) naming the flag.
func (c Commands) CheckSizeFlags(t *testing.T, cmd string, newFlags func() *flag.FlagSet, names ...string) {
	t.Helper()
	for _, name := range names {
		for _, tc := range []struct {
			in   string
			want int64
		}{
			{"1GB", 1_000_000_000}, {"1GiB", 1 << 30}, {"1.5MB", 1_500_000}, {"1.5KiB", 1536}, {"512", 512}, {"512B", 512}, {"2kb", 2000},
		} {
			fs := newFlags()
			if err := fs.Parse([]string{"-" + name, tc.in}); err != nil {
				t.Errorf("%s -%s %s: %v", cmd, name, tc.in, err)
				continue
			}
			if got, want := fs.Lookup(name).Value.String(), cli.FormatByteSize(tc.want); got != want {
				t.Errorf("%s -%s %s: %s, want %s (%d bytes)", cmd, name, tc.in, got, want, tc.want)
			}
		}
		for _, bad := range []string{"1.5.5MB", "10M", "-1", "10XB"} {
			var out, errb bytes.Buffer
			code := c.Run(t.Context(), []string{cmd, "-" + name, bad}, &out, &errb)
			if msg := `invalid value "` + bad + `" for flag -` + name + ": "; code != cli.ExitUsage || !strings.Contains(errb.String(), msg) {
				t.Errorf("%s -%s %s: exit %d, want %d; stderr should contain %q:\n%s%s", cmd, name, bad, code, cli.ExitUsage, msg, out.String(), errb.String())
			}
		}
	}
}
