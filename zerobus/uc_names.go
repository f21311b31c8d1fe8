package zerobus

// The official SDK's rule for column and field names: it refuses a name
// that is not a proto identifier, or is a proto keyword, where zbstream's
// record package would make one of it (and keep the name as json_name).

import (
	"fmt"

	"google.golang.org/protobuf/types/descriptorpb"
)

// protoKeywords are the names the official SDK refuses as proto keywords.
var protoKeywords = map[string]bool{
	"syntax": true, "import": true, "option": true, "package": true, "message": true,
	"enum": true, "service": true, "rpc": true, "returns": true, "reserved": true,
	"to": true, "max": true, "double": true, "float": true, "int32": true,
	"int64": true, "uint32": true, "uint64": true, "sint32": true, "sint64": true,
	"fixed32": true, "fixed64": true, "sfixed32": true, "sfixed64": true, "bool": true,
	"string": true, "bytes": true,
}

// checkFieldName refuses, with the official SDK's message, a column or
// field name that is empty, starts with a digit, holds a character other
// than an ASCII letter, digit or '_', or is a proto keyword.
func checkFieldName(name string) error {
	why := ""
	switch {
	case name == "":
		why = "empty"
	case name[0] >= '0' && name[0] <= '9':
		why = "cannot start with a digit"
	case !isIdentChars(name):
		why = "only alphanumeric and '_' characters allowed"
	case protoKeywords[name]:
		why = "reserved proto keyword"
	default:
		return nil
	}
	return &SchemaError{Kind: kindInvalidFieldName, Field: name, Message: fmt.Sprintf("invalid field name '%s': %s", name, why)}
}

func isIdentChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkNestedNames applies checkFieldName to the fields of a descriptor's
// nested messages, which come from the columns' type_json: record names a
// field after its name made an identifier and keeps the name itself as
// json_name. Map entries' key and value are protobuf's names.
func checkNestedNames(dp *descriptorpb.DescriptorProto) error {
	for _, n := range dp.GetNestedType() {
		if n.GetOptions().GetMapEntry() {
			continue
		}
		for _, f := range n.GetField() {
			if err := checkFieldName(f.GetJsonName()); err != nil {
				return err
			}
		}
		if err := checkNestedNames(n); err != nil {
			return err
		}
	}
	return nil
}
