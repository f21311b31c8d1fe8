package zbstream

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ProtoMessage is a generated protobuf message.
type ProtoMessage = proto.Message

// protoDescriptor is a proto stream's message type and its serialized
// DescriptorProto, as sent to the server; json is the message type a
// WithJSONToProto stream converts JSON records to (nil otherwise).
type protoDescriptor struct {
	name  protoreflect.FullName
	bytes []byte
	json  protoreflect.MessageDescriptor
}

// describe returns m's descriptor as the server needs it: one
// DescriptorProto with its nested types. A field whose type lies outside m
// (another top-level message or enum) cannot be resolved by the server, so
// it is refused here with the field's name rather than by the server later.
func describe(m proto.Message) (*protoDescriptor, error) {
	if m == nil {
		return nil, &ConfigError{Field: "ProtoMessage", Reason: "must not be nil"}
	}
	md := m.ProtoReflect().Descriptor()
	if err := CheckProtoDescriptor(md); err != nil {
		return nil, err
	}
	b, err := proto.Marshal(protodesc.ToDescriptorProto(md))
	if err != nil {
		return nil, fmt.Errorf("zbstream: encoding the descriptor of %s: %w", md.FullName(), err)
	}
	return &protoDescriptor{name: md.FullName(), bytes: b}, nil
}

// CheckProtoDescriptor reports whether md can describe the records of a
// proto stream: the server is given one DescriptorProto, so every message
// and enum its fields use must be md itself or nested in it. A type outside
// it is a *ConfigError naming the field. WithProtoMessage makes the same
// check; call this to refuse a message type before anything else (when it
// comes from a descriptor set, say).
func CheckProtoDescriptor(md protoreflect.MessageDescriptor) error {
	return selfContained(md, md.FullName())
}

// selfContained checks that every message and enum field of md (and of its
// nested messages) refers to root itself or to a type nested in it.
func selfContained(md protoreflect.MessageDescriptor, root protoreflect.FullName) error {
	inside := func(n protoreflect.FullName) bool {
		return n == root || strings.HasPrefix(string(n), string(root)+".")
	}
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		var ref protoreflect.FullName
		switch {
		case f.Message() != nil:
			ref = f.Message().FullName()
		case f.Enum() != nil:
			ref = f.Enum().FullName()
		default:
			continue
		}
		if !inside(ref) {
			return &ConfigError{Field: "ProtoMessage", Reason: fmt.Sprintf(
				"field %s refers to %s, which is not nested in %s: the server gets one message descriptor, so nest the type", f.FullName(), ref, root)}
		}
	}
	nested := md.Messages()
	for i := range nested.Len() {
		if err := selfContained(nested.Get(i), root); err != nil {
			return err
		}
	}
	return nil
}
