package server

import ingestpb "github.com/zbstream/zbstream/proto"

// RecordChecker applies the server's record rules (protocol.md §8,
// scenario 6) to one record, for a client that wants to refuse a record
// before it sends it rather than have the server end the stream: it runs
// the very code a stream of that type and descriptor runs, so the two
// cannot drift apart.
type RecordChecker struct{ schema *recordSchema }

// NewRecordChecker returns the checker of a stream of record type typ; for
// PROTO, descriptor is the serialized DescriptorProto the client sends at
// open, which the server turns into a message type its own way (so that
// a client's checks see, for instance, the enums the server will treat as
// closed). It fails as the open would.
func NewRecordChecker(typ ingestpb.RecordType, descriptor []byte) (*RecordChecker, error) {
	s, err := newRecordSchema(typ, descriptor)
	if err != nil {
		return nil, err
	}
	return &RecordChecker{schema: s}, nil
}

// Check returns nil if the stream accepts rec, and otherwise why not: for
// JSON, ErrNotObject, ErrInvalidUTF8 or ErrInvalidJSON; for PROTO, the
// decoding error or the field that does not match the descriptor.
func (c *RecordChecker) Check(rec []byte) error {
	if c.schema.typ == ingestpb.RecordType_JSON {
		return checkJSON(rec)
	}
	return c.schema.checkProto(rec)
}
