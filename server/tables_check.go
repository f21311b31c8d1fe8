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
// definition: base is the stream's own checker (a record decodes under
// its descriptor or schema, a JSON record is an object), then check, when
// set, the table's rules for one record.
type tableChecker struct {
	base  recordChecker
	check func(rec []byte) error
}

// Type implements recordChecker.
func (c tableChecker) Type() ingestpb.RecordType { return c.base.Type() }

// CheckCall implements recordChecker.
func (c tableChecker) CheckCall(recs [][]byte) error {
	if err := c.base.CheckCall(recs); err != nil || c.check == nil {
		return err
	}
	return checkEach(c.Type(), recs, c.check)
}

// checkEach checks every record of one ingest call with check and returns
// the first refusal, naming the record type and, in a batch, the record's
// index, as record.Checker.CheckCall does.
func checkEach(typ ingestpb.RecordType, recs [][]byte, check func([]byte) error) error {
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

// withTable returns the checker of a stream of table def whose own checker
// is base: a JSON record must fit the columns (unknown field, wrong type,
// a NOT NULL column null or missing: refused, naming the field); a proto
// stream's message must fit them at open, and each record must set its NOT
// NULL columns; an Avro stream's schema must fit them at open, which its
// datums then do. The error says why a stream does not fit, for the open's
// INVALID_ARGUMENT. A nil def (a table without a definition) leaves base
// as it is.
func withTable(base recordChecker, def *tableDef, descriptor []byte) (recordChecker, error) {
	if def == nil {
		return base, nil
	}
	switch c := base.(type) {
	case *avroChecker:
		if err := avroFitsTable(c.schema, def.check.Fields()); err != nil {
			return nil, fmt.Errorf("the Avro schema does not fit table %s: %w", def.name, err)
		}
		return base, nil
	}
	switch base.Type() {
	case ingestpb.RecordType_JSON:
		return tableChecker{base: base, check: def.check.CheckJSON}, nil
	case ingestpb.RecordType_PROTO:
		md, err := record.MessageDescriptor(descriptor)
		if err != nil {
			return nil, err // the base checker was built from it: not reached
		}
		fit, err := def.check.ProtoFit(md)
		if err != nil {
			return nil, fmt.Errorf("the descriptor does not fit table %s: %w", def.name, err)
		}
		// fit.Check decodes the record as the base checker does.
		return tableChecker{base: typeOnly(base.Type()), check: fit.Check}, nil
	}
	return base, nil
}

// typeOnly is a recordChecker that checks nothing: the base of a
// tableChecker whose check does it all.
type typeOnly ingestpb.RecordType

// Type implements recordChecker.
func (t typeOnly) Type() ingestpb.RecordType { return ingestpb.RecordType(t) }

// CheckCall implements recordChecker.
func (typeOnly) CheckCall([][]byte) error { return nil }
