package server

// The checks of a table with a definition (Options.Tables): at open, the
// stream's descriptor or Avro schema must fit the table's columns; then
// every record is checked against them as well as against the stream's
// own schema.

import (
	"fmt"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// tableChecker checks the records of a stream of a table with a
// definition: check decodes a record as the stream's own checker would
// and checks it against the columns.
type tableChecker struct {
	typ   ingestpb.RecordType
	check func(rec []byte) error
}

// Type implements recordChecker.
func (c tableChecker) Type() ingestpb.RecordType { return c.typ }

// CheckCall implements recordChecker.
func (c tableChecker) CheckCall(recs [][]byte) error { return record.CheckEach(c.typ, recs, c.check) }

// withTable returns the checker of a stream of table def whose own checker
// is base: a JSON record must fit the columns (unknown field, wrong type,
// a NOT NULL column null or missing: refused, naming the field); a proto
// stream's message must fit them at open, and each record must set its NOT
// NULL columns; an Avro stream's schema must fit them at open, which its
// datums then do. The error says why a stream does not fit, for the open's
// INVALID_ARGUMENT. A nil def (a table without a definition) leaves base
// as it is.
func withTable(base recordChecker, def *tableDef) (recordChecker, error) {
	if def == nil {
		return base, nil
	}
	switch c := base.(type) {
	case *avroChecker:
		if err := avroFitsTable(c.schema, def.check.Fields()); err != nil {
			return nil, fmt.Errorf("the Avro schema does not fit table %s: %w", def.name, err)
		}
		return base, nil
	case *record.Checker:
		if c.Type() == ingestpb.RecordType_JSON {
			// CheckJSON checks the grammar (record.CheckJSON) first.
			return tableChecker{typ: c.Type(), check: def.check.CheckJSON}, nil
		}
		fit, err := def.check.ProtoFit(c.Message())
		if err != nil {
			return nil, fmt.Errorf("the descriptor does not fit table %s: %w", def.name, err)
		}
		// fit.Check decodes the record as the base checker does.
		return tableChecker{typ: c.Type(), check: fit.Check}, nil
	}
	return base, nil
}
