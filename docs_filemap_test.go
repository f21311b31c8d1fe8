package zbstream_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// fileMapLineRE matches a line of a package's file map in its doc.go:
	// a tab-indented comment line that starts with a Go file's name or a
	// pattern of names ("observe*.go").
	fileMapLineRE = regexp.MustCompile(`(?m)^//\t[\w*-]+\.go\b`)
	// mapLinesRE matches the tab-indented comment lines the map is made of.
	mapLinesRE = regexp.MustCompile(`(?m)^//\t.*$`)
	// fileNameRE matches a file name or pattern anywhere in such a line
	// ("wait.go       Wait and Flush; close.go Close").
	fileNameRE = regexp.MustCompile(`[\w*-]+\.go\b`)
	// platformRE matches a platform variant's suffix: arena_linux.go is
	// mapped by arena.go.
	platformRE = regexp.MustCompile(`_(linux|unix|other|windows|darwin)\.go$`)
)

// TestFileMaps keeps every package's file map true: a doc.go that maps its
// files ("//\tname.go  what it holds") names files that exist, and every
// non-test Go file of the package (a platform variant through its base
// name), so that a newcomer who follows the map finds each file and misses
// none.
func TestFileMaps(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "doc.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !fileMapLineRE.Match(src) {
			return nil // no file map in this package
		}
		var mapped []string // every name in the map's lines, continuations too
		for _, line := range mapLinesRE.FindAllString(string(src), -1) {
			mapped = append(mapped, fileNameRE.FindAllString(line, -1)...)
		}
		dir := filepath.Dir(path)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		var files []string
		for _, e := range entries {
			n := e.Name()
			if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && n != "doc.go" {
				files = append(files, n)
			}
		}
		covers := func(pattern, file string) bool {
			ok, _ := filepath.Match(pattern, file)
			return ok || pattern == platformRE.ReplaceAllString(file, ".go")
		}
		for _, p := range mapped {
			if !slices.ContainsFunc(files, func(f string) bool { return covers(p, f) }) {
				t.Errorf("%s maps %s, which is not a file of the package", path, p)
			}
		}
		for _, f := range files {
			if !slices.ContainsFunc(mapped, func(p string) bool { return covers(p, f) }) {
				t.Errorf("%s: the file map lacks %s", path, f)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
