package spool

import (
	"fmt"

	"github.com/zbstream/zbstream"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// newChecker returns the checker of the records of a spool whose header is
// m: the server's own rules (package record) for the stream's record type
// and, for proto, the descriptor the stream is created with. An Avro spool
// has none (nil): the library does not decode Avro, the server checks.
func newChecker(m meta) (*record.Checker, error) {
	if m.RecordType == "avro" {
		return nil, nil
	}
	typ := ingestpb.RecordType_JSON
	if m.RecordType == "proto" {
		typ = ingestpb.RecordType_PROTO
	}
	c, err := record.NewChecker(typ, m.Descriptor)
	if err != nil {
		return nil, fmt.Errorf("spool: the server would refuse the descriptor of %s: %w", m.Message, err)
	}
	return c, nil
}

// checkRecords refuses records the server would refuse for their content,
// before they reach the log. An entry is sent again at every Open until
// the server has it, so an entry the server refuses (INVALID_ARGUMENT, a
// non-retryable failure) would fail the stream at every Open: it must
// never be synced. The checks are the reference server's (record.Checker):
// a JSON record is one JSON object in valid UTF-8; a proto record decodes
// with the stream's descriptor, with every required field, no unknown
// field (at any depth) and no value outside a closed enum.
func (s *Spool) checkRecords(records [][]byte) error {
	if s.check == nil {
		return nil // Avro: see newChecker
	}
	for i, r := range records {
		if err := s.check.Check(r); err != nil {
			return fmt.Errorf("%w: record %d of the call: %v (nothing was written)", zbstream.ErrRecordType, i, err)
		}
	}
	return nil
}
