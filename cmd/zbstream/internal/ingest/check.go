package ingest

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// Records are checked before anything is sent with the reference server's
// own rules (record.Checker, which the server checks with), not a copy of
// them: a record the server would refuse ends the stream for good, so the
// pre-check must
// refuse exactly what the server refuses, and sharing the code is the only
// way to keep that true as the rules change.

// checker returns the checker of the records of src's format: for
// proto, built from the DescriptorProto the client sends at create (as
// zbstream.WithProtoMessage encodes it), which the server turns into its
// own message type.
func checker(md protoreflect.MessageDescriptor) (*record.Checker, error) {
	if md == nil {
		return record.NewChecker(ingestpb.RecordType_JSON, nil)
	}
	desc, err := proto.Marshal(protodesc.ToDescriptorProto(md))
	if err != nil {
		return nil, cli.UsageErr("-proto-message %s: encoding its descriptor: %v", md.FullName(), err)
	}
	c, err := record.NewChecker(ingestpb.RecordType_PROTO, desc)
	if err != nil {
		return nil, cli.UsageErr("-proto-message %s: the server would refuse its descriptor: %v", md.FullName(), err)
	}
	return c, nil
}

// place is where a record is in its file: its line (JSON lines) or
// its number from 1 (protobuf), and the bytes it takes.
type place struct {
	n        int64
	off, end int64 // byte offsets of its start (line or length prefix) and after it (its newline included)
}

// invalidRecord is a record the server would refuse. The reader that
// returns it can go on past it: the file's framing is intact.
type invalidRecord struct {
	loc    string // "FILE:LINE", or "FILE: record N at byte offset X"
	place  place
	reason string
	record []byte
}

func (e *invalidRecord) Error() string { return e.loc + ": " + e.reason }

// jsonReason says why a JSON stream would refuse rec, or "".
func jsonReason(c *record.Checker, rec []byte) string {
	if reason := sizeReason(rec); reason != "" {
		return reason
	}
	err := c.Check(rec)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, record.ErrNotObject):
		return fmt.Sprintf("not a JSON object (starts with %q)", preview(rec))
	case errors.Is(err, record.ErrInvalidUTF8):
		return fmt.Sprintf("invalid UTF-8 at byte %d of the record", firstInvalidUTF8(rec)+1)
	case errors.Is(err, record.ErrInvalidJSON):
		return "malformed JSON: " + jsonProblem(rec)
	}
	return err.Error()
}

// sizeReason says why rec cannot be sent even alone, or "": the
// per-call limit counts it as the request frames it (record.FramedSize).
func sizeReason(rec []byte) string {
	if n := record.FramedSize(len(rec)); n > maxRecordBytes {
		return fmt.Sprintf("record of %d bytes (%d as sent) is over the per-call limit of %d bytes", len(rec), n, maxRecordBytes)
	}
	return ""
}

// firstInvalidUTF8 returns the index of the first byte of b that is
// not part of valid UTF-8.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// skipper hands on the valid records of r and gives each invalid one
// to skip, which returns nil to go on past it, or the error that ends the
// read.
type skipper struct {
	r    recordReader
	skip func(*invalidRecord) error
}

func (s *skipper) next() ([]byte, error) {
	for {
		rec, err := s.r.next()
		var bad *invalidRecord
		if !errors.As(err, &bad) {
			return rec, err
		}
		if err := s.skip(bad); err != nil {
			return nil, err
		}
	}
}

func (s *skipper) place() place { return s.r.place() }

// refuseInvalid is the skip function of a run without -skip-invalid:
// the first invalid record ends it, as an input error (exit 3) that says
// how to go on.
func refuseInvalid(bad *invalidRecord) error {
	return cli.WithCode(cli.ExitInput, fmt.Errorf("%w (nothing was sent: correct the record, or pass -skip-invalid with a dead-letter file to set aside every record the server would refuse)", bad))
}
