package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != cli.ExitOK || !strings.HasPrefix(out.String(), "zbstream ") || !strings.Contains(out.String(), runtime.Version()) {
			t.Fatalf("%v: exit %d: %q %q", args, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version", "x"}, &out, &errb); code != cli.ExitUsage {
		t.Fatalf("version x: exit %d", code)
	}
	info := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2025-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionLine(info), "zbstream v1.2.3 (go1.99, commit abc123 of 2025-01-02T03:04:05Z, dirty)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	info.Settings = nil
	if got, want := versionLine(info), "zbstream v1.2.3 (go1.99)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := versionLine(nil); got != "zbstream (unknown) ("+runtime.Version()+")" {
		t.Errorf("no build info: %q", got)
	}
}
