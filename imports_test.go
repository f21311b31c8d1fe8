package zbstream_test

// The library packages are meant to be imported by other SDKs, so every
// dependency is a cost to them (architecture.md, "Layout"). This test keeps
// their import graphs within the allowed sets, using `go list -deps`.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/zbstream/zbstream"

// libraryDirs are the library packages, relative to the module root:
// writer is a layer over the root's Client, and internal/atomicfile serves
// it (and the spool and the command) with the standard library alone;
// internal/faults is the fault vocabulary the in-memory transport shares
// with the reference server. A directory that does not exist yet (or holds
// no non-test Go file yet) is skipped.
var libraryDirs = []string{"core", "fsm", "proto", "record", "io", "io/memtransport", "grpcio", "internal/version", "internal/atomicfile", "internal/filelock", "internal/faults", "spool", "zerobus", "writer", "."}

// isStd reports whether an import path belongs to the standard library: its
// first element has no dot.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// under reports whether path is root or a package below it.
func under(path string, roots ...string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}

// pureAllowed is the rule for core and fsm: the standard library,
// looplab/fsm, and the module's own core and fsm.
func pureAllowed(path string) bool {
	return isStd(path) || under(path,
		"github.com/looplab/fsm",
		modulePath+"/core",
		modulePath+"/fsm",
	)
}

// libraryAllowed is the rule for every library package: the standard
// library, looplab/fsm, grpc and its transitive dependencies, protobuf, and
// the module's own library packages.
func libraryAllowed(path string) bool {
	if isStd(path) || under(path,
		"github.com/looplab/fsm",
		"google.golang.org/grpc",
		"golang.org/x/net",
		"golang.org/x/sys",
		"golang.org/x/text",
		"google.golang.org/genproto/googleapis/rpc",
		"google.golang.org/protobuf",
	) {
		return true
	}
	for _, dir := range libraryDirs {
		if path == modulePath || (dir != "." && under(path, modulePath+"/"+dir)) {
			return true
		}
	}
	return false
}

// recordAllowed is the rule for the direct imports of record, the record
// rules that the client, the spool, the server, the command and the
// adapters share: the standard library, protobuf and the generated wire
// code, so that what checks records brings in none of the client or the
// server. (The wire code brings in grpc, its service stubs: the library
// rule holds for the rest of record's graph.)
func recordAllowed(path string) bool {
	return isStd(path) || under(path, "google.golang.org/protobuf", modulePath+"/proto")
}

// stdlibOnly is the rule for internal/atomicfile and internal/filelock:
// the standard library (and golang.org/x/sys, which the lock needs on
// Windows).
func stdlibOnly(path string) bool {
	return isStd(path) || under(path, "golang.org/x/sys", modulePath+"/internal/atomicfile", modulePath+"/internal/filelock")
}

// driverAllowed is the rule for the driver, io and its in-memory transport:
// no gRPC and no protobuf, only the standard library, the core, fsm, io and
// internal/faults (the fault vocabulary the in-memory transport shares with
// the reference server).
func driverAllowed(path string) bool {
	return pureAllowed(path) || under(path, modulePath+"/io") || path == modulePath+"/internal/faults"
}

// depGraph is the output of `go list -deps`: every package in the build
// of root with its direct imports.
type depGraph struct {
	root    string
	imports map[string][]string
	order   []string // as go list printed them (dependencies first)
}

// parseDeps reads lines of "importpath import1 import2 ...".
func parseDeps(out string) depGraph {
	g := depGraph{imports: map[string][]string{}}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		g.imports[fields[0]] = fields[1:]
		g.order = append(g.order, fields[0])
	}
	if len(g.order) > 0 {
		g.root = g.order[len(g.order)-1] // -deps prints the named package last
	}
	return g
}

// chain returns a shortest import chain from the root to pkg.
func (g depGraph) chain(pkg string) []string {
	parent := map[string]string{g.root: ""}
	queue := []string{g.root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == pkg {
			var out []string
			for q := pkg; q != ""; q = parent[q] {
				out = append(out, q)
			}
			slices.Reverse(out)
			return out
		}
		for _, imp := range g.imports[p] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return []string{g.root, "?", pkg}
}

// violations lists every package in the graph that allow refuses, each with
// the packages that import it and one import chain from the root.
func (g depGraph) violations(allow func(string) bool) []string {
	var out []string
	for _, pkg := range g.order {
		if allow(pkg) {
			continue
		}
		var importers []string
		for _, p := range g.order {
			if slices.Contains(g.imports[p], pkg) {
				importers = append(importers, p)
			}
		}
		out = append(out, fmt.Sprintf("%s imports %s (imported directly by %s; chain: %s)",
			g.root, pkg, strings.Join(importers, ", "), strings.Join(g.chain(pkg), " -> ")))
	}
	return out
}

// goListDeps runs `go list -deps` on one package of the module.
func goListDeps(t *testing.T, pkg string) depGraph {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	g := parseDeps(string(out))
	if want := strings.TrimSuffix(modulePath+"/"+strings.TrimPrefix(pkg, "./"), "/."); g.root != want {
		t.Fatalf("go list -deps %s: last package %q, want %q", pkg, g.root, want)
	}
	return g
}

// hasGoSource reports whether dir holds a non-test Go file.
func hasGoSource(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

// TestLibraryImports checks every existing library package: core and fsm
// import only the standard library and looplab/fsm (and each other),
// internal/atomicfile only the standard library, record directly only the
// standard library, protobuf and proto; all of them stay within
// the standard library, looplab/fsm, grpc (with its golang.org/x and
// genproto rpc dependencies), protobuf and the module's own library
// packages.
func TestLibraryImports(t *testing.T) {
	checked := 0
	for _, dir := range libraryDirs {
		if !hasGoSource(filepath.FromSlash(dir)) {
			if dir == "core" || dir == "fsm" || dir == "proto" || dir == "record" || dir == "writer" || dir == "internal/atomicfile" {
				t.Errorf("library package ./%s is missing", dir)
			} else {
				t.Logf("./%s does not exist yet: skipped", dir)
			}
			continue
		}
		checked++
		t.Run(dir, func(t *testing.T) {
			g := goListDeps(t, "./"+dir)
			allow := libraryAllowed
			rule := "the standard library, looplab/fsm, grpc, protobuf and the library packages"
			switch dir {
			case "core", "fsm":
				allow = pureAllowed
				rule = "the standard library, looplab/fsm, core and fsm"
			case "io", "io/memtransport":
				allow = driverAllowed
				rule = "the standard library, looplab/fsm, core, fsm, io and internal/faults"
			case "record":
				for _, imp := range g.imports[g.root] {
					if !recordAllowed(imp) {
						t.Errorf("./record imports %s; it may import only the standard library, protobuf and proto", imp)
					}
				}
			case "internal/atomicfile", "internal/filelock":
				allow = stdlibOnly
				rule = "the standard library"
			case "internal/faults":
				// Nothing of core: the reference server uses it and checks
				// the client independently of it.
				allow = func(path string) bool { return isStd(path) || path == modulePath+"/internal/faults" }
				rule = "the standard library"
			}
			for _, v := range g.violations(allow) {
				t.Errorf("%s; ./%s may import only %s", v, dir, rule)
			}
		})
	}
	if checked == 0 {
		t.Fatal("no library package checked")
	}
}

// TestImportCheckerReports makes sure the checker itself catches an
// offending import and names who pulled it in.
func TestImportCheckerReports(t *testing.T) {
	out := strings.Join([]string{
		"fmt ",
		"example.com/bad fmt",
		"github.com/looplab/fsm fmt",
		modulePath + "/fsm github.com/looplab/fsm",
		"google.golang.org/grpc fmt",
		modulePath + "/core fmt " + modulePath + "/fsm example.com/bad google.golang.org/grpc",
	}, "\n")
	g := parseDeps(out)
	if g.root != modulePath+"/core" {
		t.Fatalf("root %q", g.root)
	}
	pure := g.violations(pureAllowed)
	if len(pure) != 2 {
		t.Fatalf("pure rule: %d violations, want 2 (bad, grpc): %q", len(pure), pure)
	}
	want := modulePath + "/core imports example.com/bad (imported directly by " + modulePath + "/core; chain: " +
		modulePath + "/core -> example.com/bad)"
	if pure[0] != want {
		t.Errorf("violation message\n got: %s\nwant: %s", pure[0], want)
	}
	lib := g.violations(libraryAllowed)
	if len(lib) != 1 || !strings.Contains(lib[0], "imports example.com/bad") {
		t.Errorf("library rule: %q, want only example.com/bad", lib)
	}
	for path, std := range map[string]bool{"fmt": true, "net/http": true, "vendor/golang.org/x/net/idna": true,
		"C": true, "golang.org/x/net": false, modulePath + "/core": false} {
		if isStd(path) != std {
			t.Errorf("isStd(%q) = %v, want %v", path, !std, std)
		}
	}
	if !recordAllowed("google.golang.org/protobuf/proto") || !recordAllowed(modulePath+"/proto") ||
		recordAllowed("google.golang.org/grpc") || recordAllowed(modulePath+"/core") {
		t.Error("record rule: wrong handling of protobuf, proto, grpc or core")
	}
	if libraryAllowed(modulePath+"/cmd") || libraryAllowed(modulePath+"/coreextra") || !libraryAllowed(modulePath+"/io/mem") {
		t.Error("library rule: wrong handling of the module's own packages")
	}
}

// arrowModule is Apache Arrow's Go module, which the root module requires
// for the reference server's Arrow Flight DoPut, the command and the
// Flight client they and module arrowstream share (internal/arrowflight):
// never for the library.
const arrowModule = "github.com/apache/arrow-go/v18"

// TestArrowConfined: the root module requires arrow-go for server/, cmd/
// and internal/arrowflight only. No other package of the module imports it
// directly (tests and the drop-in's arrow-tagged files aside), and no library package reaches it at all (the allow-lists of
// TestLibraryImports have no Arrow in them: this names the rule).
func TestArrowConfined(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	importers := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !slices.ContainsFunc(fields[1:], func(imp string) bool { return under(imp, arrowModule) }) {
			continue
		}
		importers++
		if !under(fields[0], modulePath+"/server", modulePath+"/cmd", modulePath+"/internal/arrowflight") {
			t.Errorf("%s imports %s: only server/, cmd/ and internal/arrowflight may", fields[0], arrowModule)
		}
	}
	if importers == 0 {
		t.Errorf("no package imports %s: drop it from go.mod, or this test is broken", arrowModule)
	}
	for _, dir := range libraryDirs {
		if !hasGoSource(filepath.FromSlash(dir)) {
			continue
		}
		g := goListDeps(t, "./"+dir)
		for _, pkg := range g.order {
			if under(pkg, arrowModule) {
				t.Errorf("./%s reaches %s (chain: %s)", dir, pkg, strings.Join(g.chain(pkg), " -> "))
			}
		}
	}
}
