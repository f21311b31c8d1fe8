package ingest

import (
	"flag"
	"io"
	"testing"
)

// TestSizeFlags: every size flag of ingest reads a size as every other
// subcommand's does, and refuses a bad one naming the flag.
func TestSizeFlags(t *testing.T) {
	newFlags := func() *flag.FlagSet { fs, _ := flagSet(io.Discard); return fs }
	cmds.CheckSizeFlags(t, "ingest", newFlags, "batch-bytes")
}
