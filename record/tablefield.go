package record

// The parsed column types of a table, exported read-only (TableField,
// FieldType) for the formats this package does not know, such as the
// reference server's Avro check.

// TableField is a column of a table, or a field of a STRUCT column, with
// its parsed type. Nullable is false for a NOT NULL column or field.
type TableField struct {
	Name     string
	Type     *FieldType
	Nullable bool
}

// FieldType is a column's type. Kind is its canonical Unity Catalog name,
// SQL aliases resolved: "STRING", "VARIANT", "DECIMAL" (precision and
// scale are not kept), "BIGINT" (LONG), "TIMESTAMP", "TIMESTAMP_NTZ",
// "INT" (INTEGER), "SMALLINT" (SHORT), "TINYINT" (BYTE), "DATE",
// "DOUBLE", "FLOAT", "BOOLEAN", "BINARY", "STRUCT", "ARRAY" or "MAP".
// Fields are a STRUCT's fields, in order; Elem is an ARRAY's element;
// Key and Value are a MAP's key and value. The nullability of an ARRAY's
// elements and a MAP's values is not kept: the proto mapping holds no null
// there (docs/protocol.md §11).
type FieldType struct {
	Kind   string
	Fields []TableField
	Elem   *FieldType
	Key    *FieldType
	Value  *FieldType
}

// kindNames are the canonical names of the kinds, FieldType.Kind.
var kindNames = map[ucKind]string{
	kindString: "STRING", kindVariant: "VARIANT", kindDecimal: "DECIMAL",
	kindLong: "BIGINT", kindTimestamp: "TIMESTAMP", kindTimestampNTZ: "TIMESTAMP_NTZ",
	kindInt: "INT", kindShort: "SMALLINT", kindByte: "TINYINT", kindDate: "DATE",
	kindDouble: "DOUBLE", kindFloat: "FLOAT", kindBoolean: "BOOLEAN", kindBinary: "BINARY",
	kindStruct: "STRUCT", kindArray: "ARRAY", kindMap: "MAP",
}

// exportFields copies parsed fields into their exported form: a new tree
// each time, so that a caller who changes it changes nothing of ours.
func exportFields(fields []ucField) []TableField {
	out := make([]TableField, len(fields))
	for i, f := range fields {
		out[i] = TableField{Name: f.name, Type: exportType(f.typ), Nullable: f.nullable}
	}
	return out
}

func exportType(t *ucType) *FieldType {
	if t == nil {
		return nil
	}
	ft := &FieldType{Kind: kindNames[t.kind], Elem: exportType(t.elem), Key: exportType(t.key), Value: exportType(t.value)}
	if t.kind == kindStruct {
		ft.Fields = exportFields(t.fields)
	}
	return ft
}
