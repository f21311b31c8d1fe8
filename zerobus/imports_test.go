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
// grpc, the zbstream root package and its record package, whose Unity
// Catalog code builds the official schema helpers' descriptors (and no
// "C": it builds with CGO_ENABLED=0), so that it stays a thin layer over
// the client. Built with the avro tag, the official SDK's Beta Avro API
// (avro.go) imports github.com/hamba/avro/v2 as the official SDK's does;
// built with the arrow tag, its Arrow API (arrow_*.go) imports arrow-go and
// zbstream's Flight client (internal/arrowflight); nothing else does.
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
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		avroTagged, arrowTagged := false, false // the official SDK's Avro and Arrow APIs: build tags
		for _, c := range f.Comments {
			if c.Pos() < f.Package && strings.TrimSpace(c.Text()) == "" {
				avroTagged = avroTagged || strings.Contains(c.List[0].Text, "//go:build avro")
				arrowTagged = arrowTagged || strings.Contains(c.List[0].Text, "//go:build arrow")
			}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			ok := !strings.Contains(first, ".") && path != "C" ||
				path == "github.com/zbstream/zbstream" || path == "github.com/zbstream/zbstream/record" ||
				strings.HasPrefix(path, "google.golang.org/protobuf/") ||
				strings.HasPrefix(path, "google.golang.org/grpc") ||
				avroTagged && path == "github.com/hamba/avro/v2" ||
				arrowTagged && (strings.HasPrefix(path, "github.com/apache/arrow-go/v18/") || path == "github.com/zbstream/zbstream/internal/arrowflight")
			if !ok {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
