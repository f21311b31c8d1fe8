package record

// Column types: a column's TypeName, and for STRUCT, ARRAY and MAP its
// type_json (the Spark StructField as JSON), parsed into a tree of ucType.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ucKind is a column type: a scalar, or a struct, array or map.
type ucKind int

const (
	kindString ucKind = iota + 1
	kindVariant
	kindDecimal
	kindLong
	kindTimestamp
	kindTimestampNTZ
	kindInt
	kindShort
	kindByte
	kindDate
	kindDouble
	kindFloat
	kindBoolean
	kindBinary
	kindStruct
	kindArray
	kindMap
)

// ucType is a parsed column type.
type ucType struct {
	kind   ucKind
	fields []ucField // kindStruct
	elem   *ucType   // kindArray
	key    *ucType   // kindMap
	value  *ucType   // kindMap
}

// ucField is a struct's field, or a table's column (pos is a column's
// Position).
type ucField struct {
	name     string
	typ      *ucType
	nullable bool
	pos      int
}

// maxTypeDepth bounds the nesting of a type_json, so that a hostile answer
// cannot exhaust the stack.
const maxTypeDepth = 64

// topLevelKinds maps a column's type_name to its kind, SQL aliases
// included. STRUCT, ARRAY and MAP are read from type_json instead.
var topLevelKinds = map[string]ucKind{
	"STRING": kindString, "VARIANT": kindVariant, "DECIMAL": kindDecimal,
	"LONG": kindLong, "BIGINT": kindLong,
	"TIMESTAMP": kindTimestamp, "TIMESTAMP_NTZ": kindTimestampNTZ,
	"INT": kindInt, "INTEGER": kindInt, "SHORT": kindShort, "SMALLINT": kindShort,
	"BYTE": kindByte, "TINYINT": kindByte, "DATE": kindDate,
	"DOUBLE": kindDouble, "FLOAT": kindFloat, "BOOLEAN": kindBoolean, "BINARY": kindBinary,
}

// sparkKinds maps a scalar type of a Spark JSON type to its kind
// ("decimal(10,2)" is handled apart).
var sparkKinds = map[string]ucKind{
	"string": kindString, "variant": kindVariant, "decimal": kindDecimal,
	"long": kindLong, "timestamp": kindTimestamp, "timestamp_ntz": kindTimestampNTZ,
	"integer": kindInt, "short": kindShort, "byte": kindByte, "date": kindDate,
	"double": kindDouble, "float": kindFloat, "boolean": kindBoolean, "binary": kindBinary,
}

// columnType parses a column's type.
func columnType(c Column) (*ucType, error) {
	name := strings.ToUpper(strings.TrimSpace(c.TypeName))
	if k, ok := topLevelKinds[name]; ok {
		return &ucType{kind: k}, nil
	}
	switch name {
	case "STRUCT", "ARRAY", "MAP":
	default:
		return nil, &SchemaError{Column: c.Name, Fault: SchemaFaultType, Reason: fmt.Sprintf("type %q has no proto mapping", c.TypeName)}
	}
	if strings.TrimSpace(c.TypeJSON) == "" {
		return nil, &SchemaError{Column: c.Name, Fault: SchemaFaultTypeJSON, Reason: fmt.Sprintf("a %s column needs its type_json", name)}
	}
	raw := json.RawMessage(c.TypeJSON)
	// type_json is the column's StructField ({"name":..,"type":..}); a
	// bare type is taken as well.
	var field struct {
		Name *string         `json:"name"`
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(raw, &field); err == nil && field.Name != nil && field.Type != nil {
		raw = field.Type
	}
	t, err := sparkType(raw, c.Name, 0)
	if err != nil {
		return nil, err
	}
	if want := map[string]ucKind{"STRUCT": kindStruct, "ARRAY": kindArray, "MAP": kindMap}[name]; t.kind != want {
		return nil, &SchemaError{Column: c.Name, Fault: SchemaFaultTypeJSON, Reason: fmt.Sprintf("type_name is %s but type_json is another type", name)}
	}
	return t, nil
}

// sparkJSON is a complex Spark JSON type.
// containsNull and valueContainsNull are not read: a repeated field or a
// map cannot hold a null, so a null element or value is refused whatever
// they say.
type sparkJSON struct {
	Type        string          `json:"type"`
	Fields      []sparkField    `json:"fields"`
	ElementType json.RawMessage `json:"elementType"`
	KeyType     json.RawMessage `json:"keyType"`
	ValueType   json.RawMessage `json:"valueType"`
}

// sparkField is one field of a Spark struct type.
type sparkField struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable *bool           `json:"nullable"`
}

// sparkType parses a Spark JSON type: a string for a scalar, an object for
// a struct, array or map. path names the column (or field) for errors.
func sparkType(raw json.RawMessage, path string, depth int) (*ucType, error) {
	if depth > maxTypeDepth {
		return nil, &SchemaError{Column: path, Fault: SchemaFaultTypeJSON, Reason: fmt.Sprintf("type nested deeper than %d", maxTypeDepth)}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, &SchemaError{Column: path, Fault: SchemaFaultTypeJSON, Reason: "type is missing from type_json"}
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, &SchemaError{Column: path, Fault: SchemaFaultTypeJSON, Reason: "type_json does not parse", Err: err}
		}
		if k, ok := sparkKinds[s]; ok {
			return &ucType{kind: k}, nil
		}
		if strings.HasPrefix(s, "decimal(") && strings.HasSuffix(s, ")") {
			return &ucType{kind: kindDecimal}, nil
		}
		return nil, &SchemaError{Column: path, Fault: SchemaFaultType, Reason: fmt.Sprintf("type %q has no proto mapping", s)}
	}
	var j sparkJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, &SchemaError{Column: path, Fault: SchemaFaultTypeJSON, Reason: "type_json does not parse", Err: err}
	}
	switch j.Type {
	case "struct":
		t := &ucType{kind: kindStruct}
		for _, f := range j.Fields {
			ft, err := sparkType(f.Type, path+"."+f.Name, depth+1)
			if err != nil {
				return nil, err
			}
			t.fields = append(t.fields, ucField{name: f.Name, typ: ft, nullable: f.Nullable == nil || *f.Nullable})
		}
		return t, nil
	case "array":
		elem, err := sparkType(j.ElementType, path+"[]", depth+1)
		if err != nil {
			return nil, err
		}
		return &ucType{kind: kindArray, elem: elem}, nil
	case "map":
		key, err := sparkType(j.KeyType, path+"{key}", depth+1)
		if err != nil {
			return nil, err
		}
		value, err := sparkType(j.ValueType, path+"{value}", depth+1)
		if err != nil {
			return nil, err
		}
		return &ucType{kind: kindMap, key: key, value: value}, nil
	default:
		return nil, &SchemaError{Column: path, Fault: SchemaFaultType, Reason: fmt.Sprintf("type %q has no proto mapping", j.Type)}
	}
}
