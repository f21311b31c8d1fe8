package server

// An AVRO stream's writer schema against a Unity Catalog table's columns
// (record.TableChecker.Fields): package record does not know Avro, so the
// fit of this format is decided here, by the same rules as a proto
// stream's (record.TableChecker.ProtoFit).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hamba/avro/v2"

	"github.com/zbstream/zbstream/record"
)

// avroScalarFits maps a scalar column kind to the Avro types that hold it,
// by base type (a logical type over one of them is taken as its base):
// long for BIGINT and the TIMESTAMPs, int for the 32-bit kinds and DATE,
// string for STRING, VARIANT and DECIMAL (as the proto mapping has it),
// bytes for BINARY; besides, narrower where every value fits and means the
// same (int into BIGINT, float into DOUBLE; not int into a TIMESTAMP, whose
// microseconds an int would not span), an enum into a STRING (a value is
// its symbol) and a fixed into a BINARY (a value is its bytes).
var avroScalarFits = map[string][]avro.Type{
	"STRING": {avro.String, avro.Enum}, "VARIANT": {avro.String}, "DECIMAL": {avro.String},
	"BIGINT": {avro.Long, avro.Int}, "TIMESTAMP": {avro.Long}, "TIMESTAMP_NTZ": {avro.Long},
	"INT": {avro.Int}, "SMALLINT": {avro.Int}, "TINYINT": {avro.Int}, "DATE": {avro.Int},
	"DOUBLE": {avro.Double, avro.Float}, "FLOAT": {avro.Float}, "BOOLEAN": {avro.Boolean},
	"BINARY": {avro.Bytes, avro.Fixed},
}

// avroFitsTable returns nil if an AVRO stream whose writer schema is
// schema fits the table of columns fields: schema is a record each of
// whose fields names a column (by the column's name) of a type that holds
// it (avroScalarFits; a record for a STRUCT, by the same rules; an array
// for an ARRAY; a map for a MAP keyed by STRING, since Avro's map keys are
// strings), a ["null", T] union (in either order) only for a nullable
// column or STRUCT field, no other union, no nullable element of an array
// or value of a map (the table's mapping holds no null there,
// docs/protocol.md §11), and every NOT NULL column, at every level, has a
// field. Otherwise the error is a *record.FitError naming the field (or
// the NOT NULL column) and why.
func avroFitsTable(schema avro.Schema, fields []record.TableField) error {
	rec, ok := avroDeref(schema).(*avro.RecordSchema)
	if !ok {
		return avroFitErrorf("", "the writer schema is %s, not a record", avroDescribe(schema))
	}
	return avroFitRecord(rec, fields, "")
}

// avroFitRecord fits a record to the columns (or a STRUCT's fields) cols;
// path is the record's path in the writer schema, "" for the schema's.
func avroFitRecord(rec *avro.RecordSchema, cols []record.TableField, path string) error {
	byName := make(map[string]int, len(cols))
	for i, c := range cols {
		byName[c.Name] = i
	}
	named := make([]bool, len(cols)) // Avro's field names are unique in a record
	for _, f := range rec.Fields() {
		fpath := avroJoin(path, f.Name())
		ci, ok := byName[f.Name()]
		if !ok {
			return avroFitErrorf(fpath, "no column is named %q", f.Name())
		}
		named[ci] = true
		if err := avroFitColumn(f.Type(), cols[ci], fpath); err != nil {
			return err
		}
	}
	for ci, c := range cols {
		if !named[ci] && !c.Nullable {
			return avroFitErrorf(avroJoin(path, c.Name), "the column is NOT NULL and record %s has no field for it", rec.FullName())
		}
	}
	return nil
}

// avroFitColumn fits a field's schema s to the column (or STRUCT field)
// col: a ["null", T] union only if col is nullable.
func avroFitColumn(s avro.Schema, col record.TableField, path string) error {
	s = avroDeref(s)
	if u, ok := s.(*avro.UnionSchema); ok {
		if !u.Nullable() {
			return avroFitErrorf(path, "a union other than [\"null\", T] has no column type")
		}
		if !col.Nullable {
			return avroFitErrorf(path, "the column is NOT NULL and the field's union admits null")
		}
		_, typ := u.Indices()
		s = u.Types()[typ]
	}
	return avroFitType(s, col.Type, path)
}

// avroFitType fits s, not a union, to the type t.
func avroFitType(s avro.Schema, t *record.FieldType, path string) error {
	s = avroDeref(s)
	if _, ok := s.(*avro.UnionSchema); ok {
		return avroFitErrorf(path, "the column is %s and takes no null: the value cannot be a union", t.Kind)
	}
	switch t.Kind {
	case "STRUCT":
		rec, ok := s.(*avro.RecordSchema)
		if !ok {
			return avroFitErrorf(path, "the column is a STRUCT and needs a record, not %s", avroDescribe(s))
		}
		return avroFitRecord(rec, t.Fields, path)
	case "ARRAY":
		a, ok := s.(*avro.ArraySchema)
		if !ok {
			return avroFitErrorf(path, "the column is an ARRAY and needs an array, not %s", avroDescribe(s))
		}
		return avroFitType(a.Items(), t.Elem, path+"[]")
	case "MAP":
		m, ok := s.(*avro.MapSchema)
		if !ok {
			return avroFitErrorf(path, "the column is a MAP and needs a map, not %s", avroDescribe(s))
		}
		if t.Key.Kind != "STRING" {
			return avroFitErrorf(path+"{key}", "an Avro map's keys are strings, and the column's are %s", t.Key.Kind)
		}
		return avroFitType(m.Values(), t.Value, path+"{value}")
	}
	allowed := avroScalarFits[t.Kind]
	if slices.Contains(allowed, s.Type()) {
		return nil
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return avroFitErrorf(path, "the field is %s and the column %s, which takes only %s", avroDescribe(s), t.Kind, strings.Join(names, ", "))
}

// avroDeref returns the schema a reference names, or s.
func avroDeref(s avro.Schema) avro.Schema {
	if r, ok := s.(*avro.RefSchema); ok {
		return r.Schema()
	}
	return s
}

// avroDescribe names s's type for errors, with its logical type if any
// ("long (timestamp-millis)").
func avroDescribe(s avro.Schema) string {
	s = avroDeref(s)
	d := string(s.Type())
	if l, ok := s.(avro.LogicalTypeSchema); ok && l.Logical() != nil {
		d += " (" + string(l.Logical().Type()) + ")"
	}
	return d
}

func avroJoin(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// avroFitErrorf is a *record.FitError at path.
func avroFitErrorf(path, format string, args ...any) error {
	return &record.FitError{Field: path, Reason: fmt.Sprintf(format, args...)}
}
