package record

import (
	"bytes"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// Checker applies the record rules of one stream (protocol.md §8,
// scenario 6): the records of a JSON stream are JSON objects in valid
// UTF-8 (CheckJSON); those of a PROTO stream decode with the stream's
// message descriptor. The reference server checks every record it
// receives with one; a client, the spool or an adapter that builds one
// from the record type and descriptor it opens its stream with refuses a
// record before it sends it, exactly as the server would. A Checker is
// immutable and safe for concurrent use.
type Checker struct {
	typ ingestpb.RecordType
	msg protoreflect.MessageDescriptor // PROTO only
}

// NewChecker returns the checker of a stream of record type typ. For
// PROTO, descriptor is required: the serialized
// google.protobuf.DescriptorProto a client sends at create, which the
// checker turns into a message type its own way (MessageDescriptor), so
// that a client's checks see, for instance, the enums the server treats
// as closed; for JSON it is ignored. A missing, unspecified or unknown
// record type, or a PROTO stream without a valid descriptor, is an error
// (the server refuses such a create with it, as INVALID_ARGUMENT).
func NewChecker(typ ingestpb.RecordType, descriptor []byte) (*Checker, error) {
	switch typ {
	case ingestpb.RecordType_JSON:
		return &Checker{typ: typ}, nil
	case ingestpb.RecordType_PROTO:
		if len(descriptor) == 0 {
			return nil, fmt.Errorf("record_type PROTO requires descriptor_proto")
		}
		md, err := MessageDescriptor(descriptor)
		if err != nil {
			return nil, fmt.Errorf("invalid descriptor_proto: %w", err)
		}
		return &Checker{typ: typ, msg: md}, nil
	case ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED:
		return nil, fmt.Errorf("record_type is missing or RECORD_TYPE_UNSPECIFIED")
	default:
		return nil, fmt.Errorf("unknown record_type %d", int32(typ))
	}
}

// Type returns the record type of the checker's stream.
func (c *Checker) Type() ingestpb.RecordType { return c.typ }

// Message returns the message type the records of a PROTO stream decode
// with (nil for JSON), for checks built on it (TableChecker.ProtoFit).
func (c *Checker) Message() protoreflect.MessageDescriptor { return c.msg }

// Check returns nil if the stream accepts rec, and otherwise why not: for
// JSON, ErrNotObject, ErrInvalidUTF8 or ErrInvalidJSON (see CheckJSON);
// for PROTO, the decoding error or the field that does not match the
// descriptor.
func (c *Checker) Check(rec []byte) error {
	if c.typ == ingestpb.RecordType_JSON {
		return CheckJSON(rec)
	}
	return c.checkProto(rec)
}

// CheckCall checks every record of one ingest call (one record, or a
// batch) and returns the first refusal, naming the record type and, in a
// batch, the record's index: the message the server sends with
// INVALID_ARGUMENT. The error wraps Check's.
func (c *Checker) CheckCall(recs [][]byte) error { return CheckEach(c.typ, recs, c.Check) }

// CheckEach checks every record of one ingest call of record type typ
// with check and returns the first refusal, in CheckCall's words (the
// record type and, in a batch, the record's index), wrapping check's
// error: for checkers of record types this package does not know (the
// reference server's Avro datums) and of tables.
func CheckEach(typ ingestpb.RecordType, recs [][]byte, check func([]byte) error) error {
	for i, r := range recs {
		if err := check(r); err != nil {
			if len(recs) == 1 {
				return fmt.Errorf("invalid %s record: %w", typ, err)
			}
			return fmt.Errorf("invalid %s record %d of the batch: %w", typ, i, err)
		}
	}
	return nil
}

// MessageDescriptor builds a MessageDescriptor from a serialized
// DescriptorProto by wrapping it in a synthetic file. The file's package is
// not part of a DescriptorProto, so it is inferred from the fully qualified
// references to the message itself (".<pkg>.<Name>", a recursive message)
// or to its nested types (".<pkg>.<Name>.<Nested>"): every package such a
// reference allows is tried, then the empty package, and the first with
// which the file builds wins (a wrong package leaves a reference
// unresolved). References to well-known types (google.protobuf.*) are
// resolved against the linked-in registry.
func MessageDescriptor(raw []byte) (protoreflect.MessageDescriptor, error) {
	dp := &descriptorpb.DescriptorProto{}
	if err := proto.Unmarshal(raw, dp); err != nil {
		return nil, err
	}
	if dp.GetName() == "" {
		return nil, fmt.Errorf("message has no name")
	}
	var pkgs []string
	seen := map[string]bool{}
	addPkg := func(p string) {
		if !seen[p] {
			seen[p] = true
			pkgs = append(pkgs, p)
		}
	}
	self := "." + dp.GetName()
	deps := map[string]bool{}
	walkTypeNames(dp, func(tn string) {
		if strings.HasPrefix(tn, ".google.protobuf.") {
			if d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(tn[1:])); err == nil {
				deps[d.ParentFile().Path()] = true
			}
		}
		if !strings.HasPrefix(tn, ".") {
			return
		}
		// ".<pkg>.<Name>": the message itself.
		if rest := tn[1:]; strings.HasSuffix(rest, self) {
			addPkg(rest[:len(rest)-len(self)])
		}
		// ".<pkg>.<Name>.<Nested>...": the name may occur several times
		// (also inside the package); each occurrence is a candidate.
		for off := 0; ; {
			j := strings.Index(tn[off:], self+".")
			if j < 0 {
				break
			}
			if i := off + j; i > 0 {
				addPkg(tn[1:i])
			}
			off += j + 1
		}
	})
	addPkg("")
	var firstErr error
	for _, pkg := range pkgs {
		for _, syntax := range []string{"proto2", "proto3"} {
			fdp := &descriptorpb.FileDescriptorProto{
				Name:        proto.String("zbstream/record/" + dp.GetName() + ".proto"),
				Syntax:      proto.String(syntax),
				MessageType: []*descriptorpb.DescriptorProto{dp},
			}
			if pkg != "" {
				fdp.Package = proto.String(pkg)
			}
			for d := range deps {
				fdp.Dependency = append(fdp.Dependency, d)
			}
			fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			return fd.Messages().Get(0), nil
		}
	}
	return nil, firstErr
}

func walkTypeNames(dp *descriptorpb.DescriptorProto, f func(string)) {
	for _, fd := range dp.GetField() {
		if tn := fd.GetTypeName(); tn != "" {
			f(tn)
		}
	}
	for _, n := range dp.GetNestedType() {
		walkTypeNames(n, f)
	}
}

// SameDescriptor reports whether two serialized DescriptorProtos describe
// the same message: equal bytes, or equal after decoding (serialization is
// not canonical). A stream resumed or created again with a descriptor
// that is not the same is refused.
func SameDescriptor(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	da, db := &descriptorpb.DescriptorProto{}, &descriptorpb.DescriptorProto{}
	if proto.Unmarshal(a, da) != nil || proto.Unmarshal(b, db) != nil {
		return false
	}
	return proto.Equal(da, db)
}

// checkProto accepts a record that decodes with the stream's message
// descriptor: required fields present, no field unknown to the
// descriptor and no closed (proto2) enum field with a value outside its
// enum.
func (c *Checker) checkProto(rec []byte) error {
	_, err := decodeProto(c.msg, rec)
	return err
}

// decodeProto decodes rec as a message of md under the rules of
// checkProto, and returns it for checks of its own (ProtoFit.Check).
func decodeProto(md protoreflect.MessageDescriptor, rec []byte) (protoreflect.Message, error) {
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(rec, m); err != nil {
		return nil, err
	}
	if err := matchesDescriptor(m); err != nil {
		return nil, err
	}
	return m, nil
}

func matchesDescriptor(m protoreflect.Message) error {
	if len(m.GetUnknown()) > 0 {
		return fmt.Errorf("fields unknown to the descriptor in %s", m.Descriptor().FullName())
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				err = checkValue(fd.MapValue(), mv)
				return err == nil
			})
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkValue(fd, l.Get(i))
			}
		default:
			err = checkValue(fd, v)
		}
		return err == nil
	})
	return err
}

// checkValue checks one value of field fd (an element, for a list or a
// map value).
func checkValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch {
	case fd.Message() != nil:
		return matchesDescriptor(v.Message())
	case fd.Kind() == protoreflect.EnumKind && fd.Enum().IsClosed():
		if n := v.Enum(); fd.Enum().Values().ByNumber(n) == nil {
			return fmt.Errorf("field %s: %d is not a value of the closed enum %s", fd.FullName(), n, fd.Enum().FullName())
		}
	}
	return nil
}
