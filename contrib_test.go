package zbstream_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// requires returns the module paths a go.mod requires, direct ones only
// when direct is set.
func requires(t *testing.T, file string, direct bool) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	block := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			block = true
			continue
		case block && line == ")":
			block = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !block:
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && !(direct && strings.Contains(line, "// indirect")) {
			out = append(out, f[0])
		}
	}
	return out
}

// TestRootRequiresNoContribDependency: the adapters under contrib/, and
// arrowstream/ (the Arrow Flight client), are modules of their own, so
// that the library does not depend on what they plug into (Arrow among
// them). The root's go.mod requires none of their direct dependencies
// that it did not need itself, and every such module builds against this
// checkout (a replace of the root by its path back to it).
func TestRootRequiresNoContribDependency(t *testing.T) {
	root := map[string]bool{}
	for _, m := range requires(t, "go.mod", false) {
		root[m] = true
	}
	mods, err := filepath.Glob("contrib/*/go.mod")
	if err != nil || len(mods) == 0 {
		t.Fatalf("no contrib module found (%v)", err)
	}
	mods = append(mods, "arrowstream/go.mod")
	for _, mod := range mods {
		b, err := os.ReadFile(mod)
		if err != nil {
			t.Fatal(err)
		}
		back := strings.TrimSuffix(strings.Repeat("../", strings.Count(mod, "/")), "/")
		replace := regexp.MustCompile(`(?m)^replace github.com/zbstream/zbstream => ` + regexp.QuoteMeta(back) + `/?$`)
		if !replace.Match(b) {
			t.Errorf("%s does not replace the root module by %s", mod, back)
		}
		for _, m := range requires(t, mod, true) {
			if root[m] && !strings.HasPrefix(m, "github.com/zbstream/") && !libraryDependency(m) && !serverDependency(m) {
				t.Errorf("the root go.mod requires %s, a dependency of %s", m, mod)
			}
		}
	}
}

// serverDependency reports whether the root module requires m for the
// reference server and the command alone (arrow-go: Arrow Flight DoPut),
// so that a contrib module (or arrowstream) may require it too. That no
// library package imports it is TestArrowConfined's and
// TestLibraryImports' to check.
func serverDependency(m string) bool { return m == arrowModule }

// libraryDependency reports whether the library itself, or its tests,
// need module m (what both the root and a contrib module may require).
func libraryDependency(m string) bool {
	switch m {
	case "google.golang.org/grpc", "google.golang.org/protobuf", "go.uber.org/goleak", "pgregory.net/rapid":
		return true
	}
	return false
}
