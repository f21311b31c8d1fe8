package bench

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
)

// arrowRowRE is a line of the -format arrow table: a path, its rows/s
// (median, min, max) and its CPU per row (median, min, max).
var arrowRowRE = regexp.MustCompile(`(?m)^\s+(json|arrow)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s+(\d+\.\d{3})\s*$`)

// checkArrowTable checks that out has a json and an arrow line with
// positive rates and CPU, and the two ratios.
func checkArrowTable(t *testing.T, out string) {
	t.Helper()
	rows := arrowRowRE.FindAllStringSubmatch(out, -1)
	if len(rows) != 2 || rows[0][1] != "json" || rows[1][1] != "arrow" {
		t.Fatalf("want a json and an arrow line in:\n%s", out)
	}
	for _, r := range rows {
		if r[2] == "0" || r[5] == "0.000" {
			t.Errorf("%s: no rate or no CPU measured: %q", r[1], r[0])
		}
	}
	if !strings.Contains(out, "arrow/json rows/s: ") || !strings.Contains(out, "arrow/json CPU a row: ") {
		t.Errorf("no ratios in:\n%s", out)
	}
}

// TestBenchArrowExternal: -format arrow against a server it did not
// start measures both paths, and the table says which server.
func TestBenchArrowExternal(t *testing.T) {
	_, ep, stop, err := benchServer("ackonly")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	code, out, errs := run(t, "-format", "arrow", "-endpoint", ep, "-batch", "50", "-duration", "40ms", "-rounds", "2")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	checkArrowTable(t, out)
	if !strings.Contains(out, "server: external "+ep) || !strings.Contains(out, "50 records a call") || !strings.Contains(out, "50 rows a batch") {
		t.Errorf("the table does not say the server or the batch:\n%s", out)
	}
}

// TestBenchArrowServerProcess runs the built command, whose -format arrow
// starts "zbstream serve" as a process of its own.
func TestBenchArrowServerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	out, err := exec.Command(clitest.Binary(t), "bench", "-format", "arrow", "-batch", "20", "-duration", "40ms", "-rounds", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkArrowTable(t, string(out))
	if !strings.Contains(string(out), "server: zbstream serve -engine ackonly, a process of its own") {
		t.Errorf("the table does not say the server:\n%s", out)
	}
}

// TestBenchArrowBadFlags: -format takes json or arrow, and arrow refuses
// the flags of the other modes and a batch over the JSON path's call
// limit.
func TestBenchArrowBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-format", "csv"}, `-format "csv": want json or arrow`},
		{[]string{"-format", "arrow", "-sizes", "20"}, "-format arrow does not take -sizes"},
		{[]string{"-format", "arrow", "-rss"}, "-format arrow does not take -rss"},
		{[]string{"-format", "arrow", "-csv", "x.csv"}, "-format arrow does not take -csv"},
		{[]string{"-format", "arrow", "-engine", "memory"}, "-format arrow does not take -engine"},
		{[]string{"-format", "arrow", "-batch", "100000", "-duration", "10ms", "-rounds", "1"}, "the JSON path's call of 100000 rows is"},
	} {
		code, out, errs := run(t, tc.args...)
		if code != cli.ExitUsage || !strings.Contains(errs, tc.want) || strings.Contains(out, "rows/s") {
			t.Errorf("bench %q: exit %d, want %d saying %q\nstdout:\n%s\nstderr:\n%s", tc.args, code, cli.ExitUsage, tc.want, out, errs)
		}
	}
}
