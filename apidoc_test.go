package zbstream_test

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// packageDoc computes the documentation of the package in dir as go doc
// and pkg.go.dev show it: exported names only, and no methods promoted from
// an embedded type of another package.
func packageDoc(t *testing.T, dir string) *doc.Package {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, bp.ImportPath)
	if err != nil {
		t.Fatalf("documenting %s: %v", dir, err)
	}
	return p
}

func docType(t *testing.T, p *doc.Package, name string) *doc.Type {
	t.Helper()
	for _, typ := range p.Types {
		if typ.Name == name {
			return typ
		}
	}
	t.Fatalf("package %s documents no type %s", p.Name, name)
	return nil
}

// qualifier matches the package qualifiers the root drops when it
// re-exports a driver or core type (core.Kind is zbstream.Kind).
var qualifier = regexp.MustCompile(`\b(core|streamio|io)\.`)

// signature is a method's type with those qualifiers removed.
func signature(m *doc.Func) string {
	return qualifier.ReplaceAllString(types.ExprString(m.Decl.Type), "")
}

// TestStreamDocumentsDriverAPI: the root Stream documents, as methods of its
// own, every exported method of the driver's Stream (package io), with the
// same signature once re-exported types are named from the root, and a doc
// comment that says what the call does; methods taking a context say how
// they honour it (they mention ctx), and methods returning an error name
// the errors they return from the root's re-exports. An embedded driver
// stream would satisfy the compiler but not go doc: its methods are
// promoted, not documented on zbstream.Stream.
func TestStreamDocumentsDriverAPI(t *testing.T) {
	root := packageDoc(t, ".")
	drv := docType(t, packageDoc(t, "io"), "Stream")
	stream := docType(t, root, "Stream")

	// The error names a doc comment may cite: exported Err* variables and
	// *Error types of the root.
	var errNames []string
	for _, v := range root.Vars {
		for _, n := range v.Names {
			if strings.HasPrefix(n, "Err") {
				errNames = append(errNames, n)
			}
		}
	}
	for _, typ := range root.Types {
		if strings.HasSuffix(typ.Name, "Error") {
			errNames = append(errNames, typ.Name)
		}
	}

	methods := make(map[string]*doc.Func)
	for _, m := range stream.Methods {
		if m.Level == 0 { // declared on Stream, not promoted
			methods[m.Name] = m
		}
	}
	if len(drv.Methods) == 0 {
		t.Fatal("io.Stream documents no methods")
	}
	for _, want := range drv.Methods {
		got, ok := methods[want.Name]
		if !ok {
			t.Errorf("zbstream.Stream does not document %s (io.Stream does)", want.Name)
			continue
		}
		if g, w := signature(got), signature(want); g != w {
			t.Errorf("zbstream.Stream.%s is %s, io.Stream.%s is %s", got.Name, g, want.Name, w)
		}
	}
	for _, m := range stream.Methods {
		if m.Level != 0 {
			continue
		}
		d := strings.TrimSpace(m.Doc)
		if d == "" {
			t.Errorf("zbstream.Stream.%s has no doc comment", m.Name)
			continue
		}
		sig := types.ExprString(m.Decl.Type)
		if strings.Contains(sig, "context.Context") && !strings.Contains(d, "ctx") {
			t.Errorf("zbstream.Stream.%s takes a context, and its doc does not say how it honours ctx", m.Name)
		}
		if strings.HasSuffix(strings.TrimSuffix(sig, ")"), "error") && !mentionsAny(d, errNames) {
			t.Errorf("zbstream.Stream.%s returns an error, and its doc names none of the root's errors", m.Name)
		}
	}
}

func mentionsAny(s string, words []string) bool {
	for _, w := range words {
		if regexp.MustCompile(`\b` + w + `\b`).MatchString(s) {
			return true
		}
	}
	return false
}
