package contract

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Render writes fd's enums, messages and services as Canonical writes the
// contract: the same blocks and lines, so that two renderings compare as
// text. Blocks are sorted by their header, lines within a block by number
// (fields and enum values), then reserved numbers, then reserved names.
func Render(fd protoreflect.FileDescriptor) string {
	var blocks []string
	for i := range fd.Enums().Len() {
		blocks = append(blocks, renderEnum(fd.Enums().Get(i)))
	}
	for i := range fd.Messages().Len() {
		blocks = append(blocks, renderMessage(fd.Messages().Get(i)))
	}
	for i := range fd.Services().Len() {
		blocks = append(blocks, renderService(fd.Services().Get(i)))
	}
	slices.Sort(blocks)
	return strings.Join(blocks, "\n")
}

// Normalize is Canonical with its blocks in Render's order.
func Normalize(table string) string {
	var blocks []string
	for b := range strings.SplitSeq(strings.TrimSpace(table), "\n\n") {
		blocks = append(blocks, strings.TrimSpace(b)+"\n")
	}
	slices.Sort(blocks)
	return strings.Join(blocks, "\n")
}

func renderEnum(ed protoreflect.EnumDescriptor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "enum %s\n", ed.Name())
	for i := range ed.Values().Len() {
		v := ed.Values().Get(i)
		fmt.Fprintf(&b, "  %s = %d\n", v.Name(), v.Number())
	}
	for i := range ed.ReservedRanges().Len() {
		r := ed.ReservedRanges().Get(i)
		for n := r[0]; n <= r[1]; n++ {
			fmt.Fprintf(&b, "  reserved %d\n", n)
		}
	}
	for i := range ed.ReservedNames().Len() {
		fmt.Fprintf(&b, "  reserved %q\n", ed.ReservedNames().Get(i))
	}
	return b.String()
}

func renderMessage(md protoreflect.MessageDescriptor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "message %s\n", md.Name())
	fields := make([]protoreflect.FieldDescriptor, md.Fields().Len())
	for i := range fields {
		fields[i] = md.Fields().Get(i)
	}
	slices.SortFunc(fields, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number() - b.Number()) })
	for _, f := range fields {
		label := "optional"
		switch {
		case f.ContainingOneof() != nil && !f.ContainingOneof().IsSynthetic():
			label = "oneof " + string(f.ContainingOneof().Name())
		case f.Cardinality() == protoreflect.Repeated:
			label = "repeated"
		case f.Cardinality() == protoreflect.Required:
			label = "required"
		}
		fmt.Fprintf(&b, "  %s %s %s = %d\n", label, typeName(f), f.Name(), f.Number())
	}
	var reserved []int
	for i := range md.ReservedRanges().Len() {
		r := md.ReservedRanges().Get(i)
		for n := r[0]; n < r[1]; n++ { // message ranges are end-exclusive
			reserved = append(reserved, int(n))
		}
	}
	slices.Sort(reserved)
	for _, n := range reserved {
		fmt.Fprintf(&b, "  reserved %d\n", n)
	}
	var names []string
	for i := range md.ReservedNames().Len() {
		names = append(names, string(md.ReservedNames().Get(i)))
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  reserved %q\n", n)
	}
	return b.String()
}

// typeName is a field's type as the table writes it: the scalar's name, or
// the message's or enum's short name.
func typeName(f protoreflect.FieldDescriptor) string {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return string(f.Message().Name())
	case protoreflect.EnumKind:
		return string(f.Enum().Name())
	}
	return f.Kind().String()
}

func renderService(sd protoreflect.ServiceDescriptor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "service %s\n", sd.Name())
	for i := range sd.Methods().Len() {
		m := sd.Methods().Get(i)
		in, out := string(m.Input().Name()), string(m.Output().Name())
		if m.IsStreamingClient() {
			in = "stream " + in
		}
		if m.IsStreamingServer() {
			out = "stream " + out
		}
		fmt.Fprintf(&b, "  rpc %s(%s) returns (%s)\n", m.Name(), in, out)
	}
	return b.String()
}
