package serve

import (
	"flag"
	"io"
	"testing"
)

// TestSizeFlags: every size flag of serve reads a size as every other
// subcommand's does, and refuses a bad one naming the flag.
func TestSizeFlags(t *testing.T) {
	newFlags := func() *flag.FlagSet { fs, _ := flags(io.Discard); return fs }
	cmds.CheckSizeFlags(t, "serve", newFlags, "receive-budget", "max-message-bytes")
}
