package server

// An Arrow stream's schema against a Unity Catalog table's columns
// (record.TableChecker.Fields), decided once at the schema frame by the
// rules of the other formats (avro_table.go): a field per column by name,
// of a type that holds it, nullable only for a nullable column, and every
// NOT NULL column present.

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbstream/zbstream/record"
)

// arrowScalarFits maps a scalar column kind to the Arrow types that hold
// it: the Zerobus mapping's own (int64 for BIGINT, timestamp[us] for the
// TIMESTAMPs, int32 for INT, date32 for DATE, utf8 for STRING...) and,
// as in the Avro mapping, narrower types whose every value fits and means
// the same (int32 into BIGINT, float32 into DOUBLE). A TIMESTAMP also
// takes int64 microseconds, as the proto mapping carries it.
var arrowScalarFits = map[string][]arrow.Type{
	"STRING": {arrow.STRING, arrow.LARGE_STRING}, "VARIANT": {arrow.STRING, arrow.LARGE_STRING},
	"DECIMAL":       {arrow.STRING, arrow.LARGE_STRING, arrow.DECIMAL128},
	"BIGINT":        {arrow.INT64, arrow.INT32, arrow.INT16, arrow.INT8},
	"TIMESTAMP":     {arrow.TIMESTAMP, arrow.INT64},
	"TIMESTAMP_NTZ": {arrow.TIMESTAMP, arrow.INT64},
	"INT":           {arrow.INT32, arrow.INT16, arrow.INT8}, "SMALLINT": {arrow.INT16, arrow.INT8},
	"TINYINT": {arrow.INT8}, "DATE": {arrow.DATE32, arrow.INT32},
	"DOUBLE": {arrow.FLOAT64, arrow.FLOAT32}, "FLOAT": {arrow.FLOAT32}, "BOOLEAN": {arrow.BOOL},
	"BINARY": {arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY},
}

// arrowFitsTable returns nil if an Arrow stream of schema fits the table
// of columns cols, or a *record.FitError naming the field and why. The
// nullability of list elements and map values is not checked: Arrow
// writers mark them nullable by default, and a null there is a row's
// matter, not the schema's.
func arrowFitsTable(schema *arrow.Schema, cols []record.TableField) error {
	return arrowFitFields(schema.Fields(), cols, "")
}

func arrowFitFields(fields []arrow.Field, cols []record.TableField, path string) error {
	byName := make(map[string]int, len(cols))
	for i, c := range cols {
		byName[c.Name] = i
	}
	named := make([]bool, len(cols))
	for _, f := range fields {
		fpath := avroJoin(path, f.Name)
		ci, ok := byName[f.Name]
		switch {
		case !ok:
			return avroFitErrorf(fpath, "no column is named %q", f.Name)
		case named[ci]:
			return avroFitErrorf(fpath, "two fields are named %q", f.Name)
		case f.Nullable && !cols[ci].Nullable:
			return avroFitErrorf(fpath, "the column is NOT NULL and the field is nullable")
		}
		named[ci] = true
		if err := arrowFitType(f.Type, cols[ci].Type, fpath); err != nil {
			return err
		}
	}
	for ci, c := range cols {
		if !named[ci] && !c.Nullable {
			return avroFitErrorf(avroJoin(path, c.Name), "the column is NOT NULL and the schema has no field for it")
		}
	}
	return nil
}

// arrowFitType fits the Arrow type dt to the column type t.
func arrowFitType(dt arrow.DataType, t *record.FieldType, path string) error {
	switch t.Kind {
	case "STRUCT":
		st, ok := dt.(*arrow.StructType)
		if !ok {
			return avroFitErrorf(path, "the column is a STRUCT and needs a struct, not %s", dt)
		}
		return arrowFitFields(st.Fields(), t.Fields, path)
	case "ARRAY":
		l, ok := dt.(arrow.ListLikeType)
		if !ok || (dt.ID() != arrow.LIST && dt.ID() != arrow.LARGE_LIST) {
			return avroFitErrorf(path, "the column is an ARRAY and needs a list, not %s", dt)
		}
		return arrowFitType(l.Elem(), t.Elem, path+"[]")
	case "MAP":
		m, ok := dt.(*arrow.MapType)
		if !ok {
			return avroFitErrorf(path, "the column is a MAP and needs a map, not %s", dt)
		}
		if err := arrowFitType(m.KeyType(), t.Key, path+"{key}"); err != nil {
			return err
		}
		return arrowFitType(m.ItemType(), t.Value, path+"{value}")
	}
	allowed := arrowScalarFits[t.Kind]
	if !slices.Contains(allowed, dt.ID()) {
		return avroFitErrorf(path, "the field is %s and the column %s, which takes only %v", dt, t.Kind, allowed)
	}
	if ts, ok := dt.(*arrow.TimestampType); ok && ts.Unit != arrow.Microsecond {
		return avroFitErrorf(path, "the field is %s: a %s column takes microseconds", dt, t.Kind)
	}
	return nil
}
