package zerobus_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports: the package imports only the standard library, protobuf,
// grpc and the zbstream root package (and no "C": it builds with
// CGO_ENABLED=0), so that it stays a thin layer over the client.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			ok := !strings.Contains(first, ".") && path != "C" ||
				path == "github.com/zbstream/zbstream" ||
				strings.HasPrefix(path, "google.golang.org/protobuf/") ||
				strings.HasPrefix(path, "google.golang.org/grpc")
			if !ok {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
