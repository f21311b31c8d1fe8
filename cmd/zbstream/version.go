package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// runVersion is the version command: what a bug report needs to name the
// build.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlags("version", "version\n\nPrints the module version, the Go version and the VCS commit of this build.", stderr)
	if err := cli.Parse(fs, args, false); err != nil {
		return err
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(info))
	return nil
}

// versionLine says "zbstream VERSION (GO, commit REV[, dirty])"; what
// the build does not know is left out.
func versionLine(info *debug.BuildInfo) string {
	version, goVersion := "(unknown)", runtime.Version()
	var extra []string
	if info != nil {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			if t := settings["vcs.time"]; t != "" {
				rev += " of " + t
			}
			extra = append(extra, "commit "+rev)
		}
		if settings["vcs.modified"] == "true" {
			extra = append(extra, "dirty")
		}
	}
	return fmt.Sprintf("zbstream %s (%s)", version, strings.Join(append([]string{goVersion}, extra...), ", "))
}
