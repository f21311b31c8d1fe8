package record

// DescriptorFromColumnsWith: DescriptorFromColumns with the two choices in
// which the official Go SDK's DescriptorFromUcColumns differs from it
// (field numbers from positions, nested messages named after their path),
// so that the drop-in (package zerobus) gets its descriptors from this
// code, type mapping and checks included, rather than from a copy of it.

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/types/descriptorpb"
)

// DescriptorOptions are the choices DescriptorFromColumnsWith makes; the
// zero value makes DescriptorFromColumns's descriptor.
type DescriptorOptions struct {
	// NumberByPosition numbers a column's field Position+1, as the
	// official Go SDK does, where DescriptorFromColumns numbers the columns
	// 1, 2, 3 in position order: the two agree for a table whose positions
	// run 0, 1, 2 and so on, and differ where positions skip. A struct's
	// fields are numbered in their order either way. Two columns of one
	// position, or a position whose number protobuf does not allow (below
	// 1, 19000 to 19999, beyond 2^29-1), are a *SchemaError.
	NumberByPosition bool

	// PathNames names the message of a STRUCT after the path of its
	// field, as the official Go SDK does: PascalName of a column's name
	// ("ship_to": ShipTo), or of the holding message's name, '_' and the
	// field's name for a struct's field (the field "geo" of ShipTo:
	// ShipToGeo); an ARRAY's element message has "Element" after it, a
	// MAP's value message "Value". A name already declared in the message
	// gets 2, then 3 and so on after it. Without it a message is named
	// after its field alone (Geo) and a repeat is a *SchemaError. A MAP's
	// entry message is named as protobuf requires either way
	// ("ShipToEntry" for a map field ship_to), since protobuf refuses any
	// other name.
	PathNames bool
}

// DescriptorFromColumnsWith is DescriptorFromColumns with the choices of
// opts: the same type mapping, labels, json_names and refusals.
func DescriptorFromColumnsWith(name string, columns []Column, opts DescriptorOptions) (*descriptorpb.DescriptorProto, error) {
	if !validIdent(name) {
		return nil, &SchemaError{Fault: SchemaFaultTable, Reason: fmt.Sprintf("message name %q is not a proto identifier", name)}
	}
	if len(columns) == 0 {
		return nil, &SchemaError{Fault: SchemaFaultTable, Reason: "no columns"}
	}
	fields, err := tableFields(columns)
	if err != nil {
		return nil, err
	}
	return builder{opts: opts}.buildMessage(name, fields, "")
}

// builder builds the messages of one descriptor with its options.
type builder struct{ opts DescriptorOptions }

// structRole is what a STRUCT's message is to the field it is named
// after: the field's type, its ARRAY's element or its MAP's value.
type structRole int

const (
	roleStruct structRole = iota
	roleElement
	roleValue
)

// fieldNumber returns the number of a field declared after one numbered
// prev: its column's position + 1 for a table's column under
// NumberByPosition, otherwise the next number protobuf allows.
func (b builder) fieldNumber(prev int32, f ucField, top bool, path string) (int32, error) {
	if top && b.opts.NumberByPosition {
		n := int64(f.pos) + 1
		if n < 1 || n > maxFieldNumber || n >= firstReservedNumber && n <= lastReservedNumber {
			return 0, &SchemaError{Column: path, Fault: SchemaFaultTable, Reason: fmt.Sprintf("its position %d makes field number %d, which protobuf does not allow", f.pos, n)}
		}
		if int32(n) == prev { // the columns are sorted by position
			return 0, &SchemaError{Column: path, Fault: SchemaFaultTable, Reason: fmt.Sprintf("another column has its position, %d", f.pos)}
		}
		return int32(n), nil
	}
	n := prev + 1
	if n == firstReservedNumber {
		n = lastReservedNumber + 1
	}
	if n > maxFieldNumber {
		return 0, &SchemaError{Column: path, Fault: SchemaFaultTable, Reason: "too many columns for proto field numbers"}
	}
	return n, nil
}

// structName names the message of the STRUCT declared at at, in the role
// given.
func (b builder) structName(at site, role structRole) string {
	suffix := ""
	switch {
	case role == roleValue:
		suffix = "Value"
	case role == roleElement && b.opts.PathNames:
		suffix = "Element" // without PathNames, named after the field
	}
	if !b.opts.PathNames {
		return camel(at.pname) + suffix
	}
	path := at.pname
	if !at.top {
		path = at.msg.GetName() + "_" + at.pname
	}
	return at.names.unique(PascalName(path) + suffix)
}

// unique returns name if the scope has no such name yet, and otherwise
// name followed by the first of 2, 3, ... that makes a name it has not.
func (s scope) unique(name string) string {
	n := name
	for i := 2; ; i++ {
		if _, taken := s[n]; !taken {
			return n
		}
		n = name + strconv.Itoa(i)
	}
}

// PascalName makes a message name of s as the official Go SDK does: each
// run of ASCII letters and digits is kept, its first letter in upper case,
// and every other character is dropped; a name that then does not start
// with a letter gets a leading "M". "analytics_events" and
// "analytics.events" are AnalyticsEvents, "1abc" is M1abc, "café" is Caf.
func PascalName(s string) string {
	b := make([]byte, 0, len(s)+1)
	up := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case !isLetter(c) && !isDigit(c):
			up = true // a byte of a non-ASCII character too
		case up && c >= 'a' && c <= 'z':
			b = append(b, c-'a'+'A')
			up = false
		default:
			b = append(b, c)
			up = false
		}
	}
	if len(b) == 0 || !isLetter(b[0]) {
		b = append([]byte{'M'}, b...)
	}
	return string(b)
}
