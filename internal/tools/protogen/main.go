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
// Three options change the names the generated code registers, for code
// that must link beside another copy of the same .proto (protobuf-go panics
// at start when two linked-in files share a path or a full name):
//
//   - -path-prefix dir/ compiles each named file x.proto as dir/x.proto: the
//     path the generated code registers. The file is still read from the
//     import directory as x.proto and its code written as for x.proto.
//   - -package p replaces the proto package of the named files, for every
//     plugin: the full names of their messages, enums and services.
//   - -grpc-package p replaces it again for protoc-gen-go-grpc alone, whose
//     output registers nothing but puts the service's full name on the wire
//     (ServiceDesc.ServiceName, the FullMethodName constants). The service can
//     so be registered under one name and called under another.
//
// -M file=importpath;name, repeatable, is passed to the plugins as protoc's
// M option: the Go package of a file, in place of its go_package. The file
// is named as registered, -path-prefix included.
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
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// plugins are the protoc plugins run on every request, in order: the name of
// the binary and its package, which this module's go.mod pins as a tool, and
// whether it generates only service code (and so sees -grpc-package).
var plugins = []struct {
	name, pkg string
	services  bool
}{
	{"protoc-gen-go", "google.golang.org/protobuf/cmd/protoc-gen-go", false},
	{"protoc-gen-go-grpc", "google.golang.org/grpc/cmd/protoc-gen-go-grpc", true},
}

// parameter is the plugin parameter sent to every plugin, before the M
// options.
const parameter = "paths=source_relative"

// options are the command's flags beyond the import and output directories.
type options struct {
	pathPrefix  string   // -path-prefix
	pkg         string   // -package
	grpcPackage string   // -grpc-package
	goPackages  []string // -M, each "file=importpath;name"
}

// mFlag collects the repeated -M flag.
type mFlag struct{ values *[]string }

// String returns the values given so far, for the flag package.
func (f mFlag) String() string {
	if f.values == nil {
		return ""
	}
	return strings.Join(*f.values, ",")
}

// Set adds one file=importpath[;name] value.
func (f mFlag) Set(v string) error {
	file, imp, ok := strings.Cut(v, "=")
	if !ok || file == "" || imp == "" {
		return fmt.Errorf("%q is not file.proto=importpath[;name]", v)
	}
	*f.values = append(*f.values, v)
	return nil
}

func main() {
	log := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "protogen: "+format+"\n", args...)
	}
	importDir := flag.String("I", ".", "import directory; the .proto files are named relative to it")
	outDir := flag.String("out", ".", "directory to write the generated files to")
	var opts options
	flag.StringVar(&opts.pathPrefix, "path-prefix", "", "directory the named files are registered under (`dir/`): x.proto is compiled as dir/x.proto")
	flag.StringVar(&opts.pkg, "package", "", "proto package to give the named files instead of their own")
	flag.StringVar(&opts.grpcPackage, "grpc-package", "", "proto package protoc-gen-go-grpc sees for the named files: the package of the service names on the wire")
	flag.Var(mFlag{&opts.goPackages}, "M", "Go package of a file (`file.proto=importpath;name`), as protoc's M option; repeatable")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: protogen [-I dir] [-out dir] [-path-prefix dir/] [-package pkg] [-grpc-package pkg] [-M file=importpath]... file.proto...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := opts.check(); err != nil {
		log("%v", err)
		os.Exit(2)
	}
	if err := run(context.Background(), *importDir, *outDir, opts, flag.Args()); err != nil {
		log("%v", err)
		os.Exit(1)
	}
}

// check reports options that cannot be used.
func (o options) check() error {
	if p := o.pathPrefix; p != "" {
		if !strings.HasSuffix(p, "/") || !filepath.IsLocal(filepath.FromSlash(p)) || path.Clean(p)+"/" != p {
			return fmt.Errorf("-path-prefix %q: want a clean relative directory ending in /, e.g. zbstream/", p)
		}
	}
	for _, p := range []struct{ flag, pkg string }{{"-package", o.pkg}, {"-grpc-package", o.grpcPackage}} {
		if p.pkg != "" && !protoreflect.FullName(p.pkg).IsValid() {
			return fmt.Errorf("%s %q is not a valid proto package name", p.flag, p.pkg)
		}
	}
	return nil
}

// run compiles files (named relative to importDir), runs every plugin on them
// and writes the results under outDir.
func run(ctx context.Context, importDir, outDir string, opts options, files []string) error {
	for i, f := range files {
		files[i] = opts.pathPrefix + filepath.ToSlash(filepath.Clean(f))
	}
	req, err := buildRequest(ctx, importDir, opts.pathPrefix, files)
	if err != nil {
		return err
	}
	params := append([]string{parameter}, prefixed("M", opts.goPackages)...)
	req.Parameter = proto.String(strings.Join(params, ","))
	if opts.pkg != "" {
		renamePackage(req, opts.pkg)
	}
	grpcReq := req
	if opts.grpcPackage != "" {
		grpcReq = proto.Clone(req).(*pluginpb.CodeGeneratorRequest)
		renamePackage(grpcReq, opts.grpcPackage)
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
		r := req
		if p.services {
			r = grpcReq
		}
		files, err := runPlugin(ctx, filepath.Join(binDir, p.name), r)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		out = append(out, files...)
	}
	// The plugins name their output after the registered path; the files
	// belong where they would be without the prefix.
	for _, f := range out {
		rest, ok := strings.CutPrefix(f.GetName(), opts.pathPrefix)
		if !ok {
			return fmt.Errorf("%s: generated file is not under -path-prefix %s", f.GetName(), opts.pathPrefix)
		}
		f.Name = proto.String(rest)
	}
	return writeFiles(outDir, out)
}

// prefixed returns every value with p in front.
func prefixed(p string, values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = p + v
	}
	return out
}

// buildRequest compiles files and returns the CodeGeneratorRequest protoc
// would send a plugin for them: every file they import, directly or not,
// in topological order (each file after its dependencies), source info kept
// on the files to generate so their comments reach the generated code.
// A file whose name starts with pathPrefix is read from importDir without
// it, so that files can be compiled, and registered, under a path they do
// not have on disk.
func buildRequest(ctx context.Context, importDir, pathPrefix string, files []string) (*pluginpb.CodeGeneratorRequest, error) {
	src := &protocompile.SourceResolver{ImportPaths: []string{importDir}}
	var resolver protocompile.Resolver = src
	if pathPrefix != "" {
		resolver = protocompile.ResolverFunc(func(name string) (protocompile.SearchResult, error) {
			if rest, ok := strings.CutPrefix(name, pathPrefix); ok {
				return src.FindFileByPath(rest)
			}
			return src.FindFileByPath(name)
		})
	}
	comp := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(resolver),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := comp.Compile(ctx, files...)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}

	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: files,
		// Parameter is set by run. CompilerVersion is left unset: the
		// plugins then write "protoc (unknown)", which no local install
		// can change.
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

// renamePackage gives the files req generates the proto package pkg, in
// req.ProtoFile and req.SourceFileDescriptors alike, and rewrites every
// reference to their types (fields, extensions, method inputs and outputs)
// in every file of req to match. Only names the renamed files define are
// rewritten: another file of their old package keeps its names.
func renamePackage(req *pluginpb.CodeGeneratorRequest, pkg string) {
	generate := map[string]bool{}
	for _, f := range req.GetFileToGenerate() {
		generate[f] = true
	}
	// renamed maps the old full name of every top-level definition of a
	// renamed file, with a leading dot as in type references, to its new one.
	renamed := map[string]string{}
	for _, fd := range req.GetProtoFile() {
		if !generate[fd.GetName()] || fd.GetPackage() == pkg {
			continue
		}
		var names []string
		for _, m := range fd.GetMessageType() {
			names = append(names, m.GetName())
		}
		for _, e := range fd.GetEnumType() {
			names = append(names, e.GetName())
		}
		for _, s := range fd.GetService() {
			names = append(names, s.GetName())
		}
		for _, x := range fd.GetExtension() {
			names = append(names, x.GetName())
		}
		old := ""
		if fd.GetPackage() != "" {
			old = "." + fd.GetPackage()
		}
		for _, n := range names {
			renamed[old+"."+n] = "." + pkg + "." + n
		}
	}
	// rewrite renames a reference to a top-level definition or to one nested
	// in it (.pkg.Top.Nested...): the longest renamed prefix that ends at a
	// dot wins.
	rewrite := func(ref *string) {
		if ref == nil {
			return
		}
		for end := len(*ref); end > 0; end = strings.LastIndexByte((*ref)[:end], '.') {
			if to, ok := renamed[(*ref)[:end]]; ok {
				*ref = to + (*ref)[end:]
				return
			}
		}
	}
	fields := func(fs []*descriptorpb.FieldDescriptorProto) {
		for _, f := range fs {
			rewrite(f.TypeName)
			rewrite(f.Extendee)
		}
	}
	var messages func(ms []*descriptorpb.DescriptorProto)
	messages = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			fields(m.GetField())
			fields(m.GetExtension())
			messages(m.GetNestedType())
		}
	}
	// buildRequest shares descriptors between the two lists (a clone does
	// not): each is renamed once.
	seen := map[*descriptorpb.FileDescriptorProto]bool{}
	for _, fd := range append(slices.Clip(req.GetProtoFile()), req.GetSourceFileDescriptors()...) {
		if seen[fd] {
			continue
		}
		seen[fd] = true
		if generate[fd.GetName()] {
			fd.Package = proto.String(pkg)
		}
		messages(fd.GetMessageType())
		fields(fd.GetExtension())
		for _, s := range fd.GetService() {
			for _, m := range s.GetMethod() {
				rewrite(m.InputType)
				rewrite(m.OutputType)
			}
		}
	}
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
