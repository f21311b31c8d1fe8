package zerobus

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// messageOf turns TableProperties.DescriptorProto into a message of that
// type, which the zbstream client describes to the server and checks
// records against (zbstream.WithProtoMessage). The DescriptorProto holds no
// package and no syntax: the package is read from the fully-qualified names
// its fields use for nested types, and the syntax is proto2 unless only
// proto3 accepts the descriptor.
func messageOf(b []byte) (proto.Message, error) {
	var dp descriptorpb.DescriptorProto
	if err := proto.Unmarshal(b, &dp); err != nil {
		return nil, fmt.Errorf("the descriptor is not a serialized DescriptorProto: %v", err)
	}
	if dp.GetName() == "" {
		return nil, fmt.Errorf("the descriptor has no message name")
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name:        proto.String("zerobus/" + dp.GetName() + ".proto"),
		MessageType: []*descriptorpb.DescriptorProto{&dp},
	}
	if pkg := packageOf(&dp); pkg != "" {
		fdp.Package = proto.String(pkg)
	}
	var firstErr error
	for _, syntax := range []string{"proto2", "proto3"} {
		fdp.Syntax = proto.String(syntax)
		fd, err := protodesc.NewFile(fdp, new(protoregistry.Files))
		if err == nil {
			return dynamicpb.NewMessage(fd.Messages().Get(0)), nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("the descriptor of %s is not valid on its own (every type its fields use must be nested in it): %v", dp.GetName(), firstErr)
}

// packageOf returns the package the message was declared in, as the
// fully-qualified type names of its fields tell it ("" when no field names
// a type, or they name it without a package).
func packageOf(dp *descriptorpb.DescriptorProto) string {
	name := dp.GetName()
	var found string
	var walk func(d *descriptorpb.DescriptorProto) bool
	walk = func(d *descriptorpb.DescriptorProto) bool {
		for _, f := range d.GetField() {
			tn, ok := strings.CutPrefix(f.GetTypeName(), ".")
			if !ok {
				continue
			}
			if tn == name || strings.HasPrefix(tn, name+".") {
				found = ""
				return true
			}
			if i := strings.Index(tn, "."+name+"."); i >= 0 {
				found = tn[:i]
				return true
			}
			if pkg, ok := strings.CutSuffix(tn, "."+name); ok {
				found = pkg
				return true
			}
		}
		for _, n := range d.GetNestedType() {
			if walk(n) {
				return true
			}
		}
		return false
	}
	walk(dp)
	return found
}
