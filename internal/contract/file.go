package contract

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Package is the proto package File puts the table's types in: a name of
// its own, so that the descriptor never meets zbstream's or the official
// one in a registry (File registers nothing).
const Package = "zbstream.contract.canonical"

// File builds a descriptor of the contract from the table alone.
func File() (protoreflect.FileDescriptor, error) {
	fdp, err := parse(Canonical)
	if err != nil {
		return nil, err
	}
	files := new(protoregistry.Files)
	if err := files.RegisterFile(durationpb.File_google_protobuf_duration_proto); err != nil {
		return nil, err
	}
	return protodesc.NewFile(fdp, files)
}

var scalars = map[string]descriptorpb.FieldDescriptorProto_Type{
	"string": descriptorpb.FieldDescriptorProto_TYPE_STRING,
	"bytes":  descriptorpb.FieldDescriptorProto_TYPE_BYTES,
	"int64":  descriptorpb.FieldDescriptorProto_TYPE_INT64,
	"int32":  descriptorpb.FieldDescriptorProto_TYPE_INT32,
	"bool":   descriptorpb.FieldDescriptorProto_TYPE_BOOL,
}

// parse reads the table into a file descriptor.
func parse(table string) (*descriptorpb.FileDescriptorProto, error) {
	fdp := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("zbstream/contract/canonical.proto"),
		Package:    proto.String(Package),
		Syntax:     proto.String("proto2"),
		Dependency: []string{"google/protobuf/duration.proto"},
	}
	enums := map[string]bool{}
	for block := range strings.SplitSeq(strings.TrimSpace(table), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if kind, name, ok := strings.Cut(lines[0], " "); ok && kind == "enum" {
			enums[name] = true
		}
	}
	for block := range strings.SplitSeq(strings.TrimSpace(table), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		kind, name, _ := strings.Cut(lines[0], " ")
		var err error
		switch kind {
		case "enum":
			err = parseEnum(fdp, name, lines[1:])
		case "message":
			err = parseMessage(fdp, name, lines[1:], enums)
		case "service":
			err = parseService(fdp, name, lines[1:])
		default:
			err = fmt.Errorf("unknown block %q", lines[0])
		}
		if err != nil {
			return nil, fmt.Errorf("contract table, %s: %w", lines[0], err)
		}
	}
	return fdp, nil
}

func parseEnum(fdp *descriptorpb.FileDescriptorProto, name string, lines []string) error {
	ed := &descriptorpb.EnumDescriptorProto{Name: proto.String(name)}
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "reserved":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return err
			}
			ed.ReservedRange = append(ed.ReservedRange, &descriptorpb.EnumDescriptorProto_EnumReservedRange{
				Start: proto.Int32(int32(n)), End: proto.Int32(int32(n))})
		case len(f) == 3 && f[1] == "=":
			n, err := strconv.Atoi(f[2])
			if err != nil {
				return err
			}
			ed.Value = append(ed.Value, &descriptorpb.EnumValueDescriptorProto{Name: proto.String(f[0]), Number: proto.Int32(int32(n))})
		default:
			return fmt.Errorf("bad line %q", l)
		}
	}
	fdp.EnumType = append(fdp.EnumType, ed)
	return nil
}

func parseMessage(fdp *descriptorpb.FileDescriptorProto, name string, lines []string, enums map[string]bool) error {
	md := &descriptorpb.DescriptorProto{Name: proto.String(name)}
	oneofs := map[string]int32{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "reserved" {
			if s, err := strconv.Unquote(f[1]); err == nil {
				md.ReservedName = append(md.ReservedName, s)
				continue
			}
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return err
			}
			md.ReservedRange = append(md.ReservedRange, &descriptorpb.DescriptorProto_ReservedRange{
				Start: proto.Int32(int32(n)), End: proto.Int32(int32(n) + 1)})
			continue
		}
		fd := &descriptorpb.FieldDescriptorProto{Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()}
		switch {
		case len(f) == 6 && f[0] == "oneof":
			idx, ok := oneofs[f[1]]
			if !ok {
				idx = int32(len(md.OneofDecl))
				oneofs[f[1]] = idx
				md.OneofDecl = append(md.OneofDecl, &descriptorpb.OneofDescriptorProto{Name: proto.String(f[1])})
			}
			fd.OneofIndex = proto.Int32(idx)
			f = f[2:]
		case len(f) == 5 && (f[0] == "optional" || f[0] == "repeated"):
			if f[0] == "repeated" {
				fd.Label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
			}
			f = f[1:]
		default:
			return fmt.Errorf("bad line %q", l)
		}
		// f is now TYPE NAME = NUMBER.
		n, err := strconv.Atoi(f[3])
		if err != nil || f[2] != "=" {
			return fmt.Errorf("bad line %q", l)
		}
		fd.Name, fd.Number, fd.JsonName = proto.String(f[1]), proto.Int32(int32(n)), proto.String(f[1])
		switch typ := f[0]; {
		case scalars[typ] != 0:
			fd.Type = scalars[typ].Enum()
		case typ == "Duration":
			fd.Type, fd.TypeName = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), proto.String(".google.protobuf.Duration")
		case enums[typ]:
			fd.Type, fd.TypeName = descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), proto.String("."+Package+"."+typ)
		default:
			fd.Type, fd.TypeName = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), proto.String("."+Package+"."+typ)
		}
		md.Field = append(md.Field, fd)
	}
	fdp.MessageType = append(fdp.MessageType, md)
	return nil
}

func parseService(fdp *descriptorpb.FileDescriptorProto, name string, lines []string) error {
	sd := &descriptorpb.ServiceDescriptorProto{Name: proto.String(name)}
	for _, l := range lines {
		// rpc NAME(IN) returns (OUT), IN and OUT optionally "stream T".
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "rpc ")
		mname, rest, ok2 := strings.Cut(rest, "(")
		in, rest, ok3 := strings.Cut(rest, ") returns (")
		out, ok4 := strings.CutSuffix(rest, ")")
		if !ok || !ok2 || !ok3 || !ok4 {
			return fmt.Errorf("bad line %q", l)
		}
		m := &descriptorpb.MethodDescriptorProto{Name: proto.String(mname)}
		if t, ok := strings.CutPrefix(in, "stream "); ok {
			in, m.ClientStreaming = t, proto.Bool(true)
		}
		if t, ok := strings.CutPrefix(out, "stream "); ok {
			out, m.ServerStreaming = t, proto.Bool(true)
		}
		m.InputType, m.OutputType = proto.String("."+Package+"."+in), proto.String("."+Package+"."+out)
		sd.Method = append(sd.Method, m)
	}
	fdp.Service = append(fdp.Service, sd)
	return nil
}
