package zbredpanda

import (
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// loadMessage returns a message of the named type from a FileDescriptorSet
// file, and its DescriptorProto serialized as the server checks records
// against it.
func loadMessage(file, name string) (proto.Message, []byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, nil, fmt.Errorf("%s: not a FileDescriptorSet: %w", file, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: message %s: %w", file, name, err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %s is not a message", file, name)
	}
	desc, err := proto.Marshal(protodesc.ToDescriptorProto(md))
	if err != nil {
		return nil, nil, err
	}
	return dynamicpb.NewMessage(md), desc, nil
}
