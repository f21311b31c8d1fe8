package bench

import (
	"flag"
	"io"
	"testing"
)

// TestSizeFlags: every size flag of bench reads a size as every other
// subcommand's does, and refuses a bad one naming the flag.
func TestSizeFlags(t *testing.T) {
	newFlags := func() *flag.FlagSet { fs, _ := flags(io.Discard); return fs }
	cmds.CheckSizeFlags(t, "bench", newFlags, "sizes", "volume", "record-size")
}
