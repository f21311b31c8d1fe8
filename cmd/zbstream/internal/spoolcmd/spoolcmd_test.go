package spoolcmd

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/spool"
)

// withCalls makes a spool of five returned (and durable) calls.
func withCalls(t *testing.T) (*zbstream.Client, *servertest.Server, string) {
	t.Helper()
	ts := servertest.Start(t)
	c, err := zbstream.NewClient("http://"+ts.Addr, zbstream.WithToken(ts.Token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	dir := t.TempDir()
	ctx := context.Background()
	sp, err := spool.Open(ctx, c, spool.Options{Dir: dir, Table: ts.Table})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := sp.IngestRecord(ctx, fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return c, ts, dir
}

// TestSpoolCheckRepair: check exits 0 on a clean spool and 1 on a damaged
// one, naming the segment, the byte and the offsets at stake; repair moves
// the damaged segment aside and says which offsets are at stake; then the
// spool checks clean and opens, the next call after the server's
// watermark.
func TestSpoolCheckRepair(t *testing.T) {
	c, ts, dir := withCalls(t)
	out := cmds.WantCode(t, cli.ExitOK, "spool", "check", dir)
	if !strings.Contains(out, "offsets 0..4") || !strings.Contains(out, "clean") {
		t.Fatalf("check of a clean spool:\n%s", out)
	}

	seg := filepath.Join(dir, "00000000000000000000.seg")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	pos := 0
	for range 2 {
		pos += 8 + int(binary.LittleEndian.Uint32(data[pos:]))
	}
	data[pos+12] ^= 1 // the third entry
	if err := os.WriteFile(seg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cmds.RunCmd(t, "spool", "check", dir)
	if code != cli.ExitFailure || !strings.Contains(out, "DAMAGED") ||
		!strings.Contains(out, fmt.Sprintf("damage: 00000000000000000000.seg at byte %d", pos)) ||
		!strings.Contains(out, "offsets 2..4 at stake") || !strings.Contains(errs, "zbstream spool repair") {
		t.Fatalf("check of a damaged spool: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = cmds.RunCmd(t, "spool", "check", "-json", dir)
	var r spool.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != cli.ExitFailure || len(r.Damage) != 1 ||
		r.Damage[0].AtStake != (spool.Offsets{First: 2, Count: 3}) {
		t.Fatalf("check -json: exit %d, %v\n%s", code, err, out)
	}

	out = cmds.WantCode(t, cli.ExitOK, "spool", "repair", dir)
	for _, want := range []string{"moved aside: " + seg + ".damaged", "kept: offsets 0..1", "at stake: offsets 2..4"} {
		if !strings.Contains(out, want) {
			t.Fatalf("repair: no %q in\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(seg + ".damaged"); err != nil || string(b) != string(data) {
		t.Fatalf("the damaged segment was not kept whole: %v", err)
	}
	out = cmds.WantCode(t, cli.ExitOK, "spool", "check", dir)
	if !strings.Contains(out, "repaired: offsets 2..4") {
		t.Fatalf("check after the repair:\n%s", out)
	}
	if out := cmds.WantCode(t, cli.ExitOK, "spool", "repair", dir); !strings.Contains(out, "nothing to repair") {
		t.Fatalf("second repair:\n%s", out)
	}

	ctx := context.Background()
	sp, err := spool.Open(ctx, c, spool.Options{Dir: dir, Table: ts.Table})
	if err != nil {
		t.Fatalf("open after the repair: %v", err)
	}
	if off, err := sp.IngestRecord(ctx, []byte(`{"i":5}`)); err != nil || off != 5 {
		t.Fatalf("call after the repair: %d, %v; want offset 5", off, err)
	}
	if err := sp.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSpoolUsage: help exits 0, bad subcommands and arguments 2, a
// directory that is not there 3.
func TestSpoolUsage(t *testing.T) {
	for _, tc := range []struct {
		code int
		args []string
		msg  string
	}{
		{cli.ExitOK, []string{"-h"}, "Subcommands:"},
		{cli.ExitOK, []string{"check", "-h"}, "-json"},
		{cli.ExitUsage, nil, "missing subcommand"},
		{cli.ExitUsage, []string{"bogus"}, "unknown subcommand"},
		{cli.ExitUsage, []string{"check"}, "want one spool directory"},
		{cli.ExitUsage, []string{"repair", "a", "b"}, "want one spool directory"},
		{cli.ExitUsage, []string{"check", "-nope", "d"}, "flag provided but not defined"},
		{cli.ExitInput, []string{"check", filepath.Join(t.TempDir(), "missing")}, "no such file"},
		{cli.ExitInput, []string{"repair", filepath.Join(t.TempDir(), "missing")}, "no such file"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, _, errs := cmds.RunCmd(t, append([]string{"spool"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Fatalf("exit %d, want %d; stderr should contain %q:\n%s", code, tc.code, tc.msg, errs)
			}
		})
	}
}
