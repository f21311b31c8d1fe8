// Command protogen generates Go code from .proto files without a system
// protoc.
//
// It compiles the .proto files with github.com/bufbuild/protocompile, builds
// the protoc plugins protoc-gen-go and protoc-gen-go-grpc at the versions
// pinned in this module's go.mod, feeds each plugin the same
// CodeGeneratorRequest protoc would, and writes the files the plugins return.
// Every version involved is pinned by this module's go.mod, which is kept
// apart from the library's so these tools never enter its module graph.
//
// It must run with this module as the working directory, which is what
//
//	go run -C internal/tools/protogen . -I <import dir> -out <output dir> file.proto...
//
// does. Relative -I and -out paths are taken from that directory too. Files
// are named relative to the import directory, as with protoc, and the output
// uses paths=source_relative.
//
// The generated headers name the compiler as "protoc (unknown)", since no
// compiler version is sent to the plugins; together with the pinned plugins
// this makes the output depend only on the inputs.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// plugins are the protoc plugins run on every request, in order: the name of
// the binary and its package, which this module's go.mod pins as a tool.
var plugins = []struct{ name, pkg string }{
	{"protoc-gen-go", "google.golang.org/protobuf/cmd/protoc-gen-go"},
	{"protoc-gen-go-grpc", "google.golang.org/grpc/cmd/protoc-gen-go-grpc"},
}

// parameter is the plugin parameter sent to every plugin.
const parameter = "paths=source_relative"

func main() {
	log := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "protogen: "+format+"\n", args...)
	}
	importDir := flag.String("I", ".", "import directory; the .proto files are named relative to it")
	outDir := flag.String("out", ".", "directory to write the generated files to")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: protogen [-I dir] [-out dir] file.proto...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(context.Background(), *importDir, *outDir, flag.Args()); err != nil {
		log("%v", err)
		os.Exit(1)
	}
}

// run compiles files (named relative to importDir), runs every plugin on them
// and writes the results under outDir.
func run(ctx context.Context, importDir, outDir string, files []string) error {
	req, err := buildRequest(ctx, importDir, files)
	if err != nil {
		return err
	}
	binDir, err := os.MkdirTemp("", "protogen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(binDir)
	if err := buildPlugins(ctx, binDir); err != nil {
		return err
	}
	var out []*pluginpb.CodeGeneratorResponse_File
	for _, p := range plugins {
		files, err := runPlugin(ctx, filepath.Join(binDir, p.name), req)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		out = append(out, files...)
	}
	return writeFiles(outDir, out)
}

// buildRequest compiles files and returns the CodeGeneratorRequest protoc
// would send a plugin for them: every file they import, directly or not,
// in topological order (each file after its dependencies), source info kept
// on the files to generate so their comments reach the generated code.
func buildRequest(ctx context.Context, importDir string, files []string) (*pluginpb.CodeGeneratorRequest, error) {
	for i, f := range files {
		files[i] = filepath.ToSlash(filepath.Clean(f))
	}
	comp := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			ImportPaths: []string{importDir},
		}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := comp.Compile(ctx, files...)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}

	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: files,
		Parameter:      proto.String(parameter),
		// CompilerVersion is left unset: the plugins then write
		// "protoc (unknown)", which no local install can change.
	}
	seen := map[string]bool{}
	var visit func(f protoreflect.FileDescriptor) error
	visit = func(f protoreflect.FileDescriptor) error {
		if seen[f.Path()] {
			return nil
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := 0; i < imports.Len(); i++ {
			imp := imports.Get(i)
			if imp.IsPlaceholder() {
				return fmt.Errorf("%s: unresolved import %q", f.Path(), imp.Path())
			}
			if err := visit(imp.FileDescriptor); err != nil {
				return err
			}
		}
		req.ProtoFile = append(req.ProtoFile, fileProto(f))
		return nil
	}
	for _, f := range compiled {
		if err := visit(f); err != nil {
			return nil, err
		}
	}
	// protoc also sends the files to generate, options of source retention
	// included, in source_file_descriptors. No option here has source
	// retention, so the same descriptors serve for both.
	for _, name := range files {
		for _, fd := range req.ProtoFile {
			if fd.GetName() == name {
				req.SourceFileDescriptors = append(req.SourceFileDescriptors, fd)
			}
		}
	}
	return req, nil
}

// fileProto returns the descriptor proto of f: the one the compiler built
// where there is one, keeping its source info, and otherwise one rebuilt from
// f (the standard imports, which the compiler takes from the Go runtime).
func fileProto(f protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	if r, ok := f.(linker.Result); ok {
		return r.FileDescriptorProto()
	}
	return protodesc.ToFileDescriptorProto(f)
}

// buildPlugins builds every plugin, at the version this module pins, into
// dir.
func buildPlugins(ctx context.Context, dir string) error {
	args := []string{"build", "-trimpath", "-o", dir + string(filepath.Separator)}
	for _, p := range plugins {
		args = append(args, p.pkg)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	// Resolve the plugins from this module's go.mod even if a go.work
	// around it lists other modules.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building plugins (run protogen from its own module, e.g. go run -C internal/tools/protogen .): %w", err)
	}
	return nil
}

// runPlugin runs the plugin binary at path on req and returns the files it
// generated.
func runPlugin(ctx context.Context, path string, req *pluginpb.CodeGeneratorRequest) ([]*pluginpb.CodeGeneratorResponse_File, error) {
	in, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, path)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	resp := &pluginpb.CodeGeneratorResponse{}
	if err := proto.Unmarshal(stdout.Bytes(), resp); err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if resp.Error != nil {
		return nil, errors.New(resp.GetError())
	}
	for _, f := range resp.File {
		if f.GetInsertionPoint() != "" {
			return nil, fmt.Errorf("%s: insertion points are not supported", f.GetName())
		}
	}
	return resp.File, nil
}

// writeFiles writes files under outDir. Names must be relative and stay
// inside outDir; a file whose content is unchanged is left untouched.
func writeFiles(outDir string, files []*pluginpb.CodeGeneratorResponse_File) error {
	sort.SliceStable(files, func(i, j int) bool { return files[i].GetName() < files[j].GetName() })
	for i, f := range files {
		if i > 0 && files[i-1].GetName() == f.GetName() {
			return fmt.Errorf("%s generated twice", f.GetName())
		}
		name := filepath.FromSlash(f.GetName())
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%q: generated file name is not a local path", f.GetName())
		}
		path := filepath.Join(outDir, name)
		content := []byte(f.GetContent())
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeFileAtomic(path, content); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic replaces path with content, so that an interrupted run
// never leaves a half-written file.
func writeFileAtomic(path string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
