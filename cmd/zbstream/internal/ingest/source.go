package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/record"
)

// Input formats, as the state file names them.
const (
	formatJSON  = "json-lines"
	formatProto = "protobuf-delimited"
	formatAvro  = "json-lines-avro" // JSON lines sent as Avro datums (-avro-schema)
	// JSON lines sent as proto records of a table's schema (-table-schema).
	formatTableProto = "json-lines-table-proto"
)

// maxRecordBytes bounds one record: the protocol's per-call limit, which a
// record sent alone must fit.
const maxRecordBytes = core.DefaultMaxCallBytes

// inputErr is an unreadable or malformed input: exit code 3.
func inputErr(format string, a ...any) error {
	return cli.WithCode(cli.ExitInput, fmt.Errorf(format, a...))
}

// checkInputFile refuses an input that does not exist or is a
// directory, before anything else is done: an input error.
func checkInputFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return inputErr("%v", err)
	}
	if fi.IsDir() {
		return inputErr("%s is a directory", path)
	}
	return nil
}

// recordReader yields a file's records in order; io.EOF ends them. A
// record the server would refuse is an *invalidRecord, after which
// the reader goes on; every other error is an input error naming the file
// and the place. place is where the last record returned (or refused) is.
type recordReader interface {
	next() ([]byte, error)
	place() place
}

// lineEncoder turns a JSON line into the record sent for it (an Avro
// datum, a proto record), or says why the line does not fit: the reason
// of an *invalidRecord.
type lineEncoder interface {
	encode(line []byte) (rec []byte, reason string)
}

// jsonLines reads a JSON-lines file: every non-empty line is one record,
// checked as the server checks it; blank lines are skipped.
type jsonLines struct {
	path  string
	r     *bufio.Reader
	check *record.Checker
	enc   lineEncoder // non-nil: each line is sent as what it encodes it to
	line  int64
	pos   int64 // bytes read
	at    place
}

func (j *jsonLines) place() place { return j.at }

func (j *jsonLines) next() ([]byte, error) {
	for {
		b, err := j.r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, inputErr("%s: reading after line %d: %v", j.path, j.line, err)
		}
		if err != nil && err != io.EOF {
			return nil, inputErr("%s: reading line %d: %v", j.path, j.line+1, err)
		}
		j.line++
		start := j.pos
		j.pos += int64(len(b))
		if j.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff")) // a UTF-8 byte order mark
		}
		rec := bytes.TrimSpace(b)
		if len(rec) == 0 {
			continue
		}
		j.at = place{n: j.line, off: start, end: j.pos}
		if reason := jsonReason(j.check, rec); reason != "" {
			return nil, &invalidRecord{loc: fmt.Sprintf("%s:%d", j.path, j.line), place: j.at, reason: reason, record: rec}
		}
		if j.enc != nil {
			out, reason := j.enc.encode(rec)
			if reason == "" {
				reason = sizeReason(out)
			}
			if reason != "" {
				return nil, &invalidRecord{loc: fmt.Sprintf("%s:%d", j.path, j.line), place: j.at, reason: reason, record: rec}
			}
			return out, nil
		}
		return rec, nil
	}
}

// jsonProblem says what is wrong with a line that json.Valid refused.
func jsonProblem(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d of the line)", se, se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

func preview(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "..."
	}
	return string(b)
}

// delimitedProto reads a file of length-delimited protobuf records: each a
// varint length, then that many bytes, which must parse as msg.
type delimitedProto struct {
	path  string
	r     *bufio.Reader
	md    protoreflect.MessageDescriptor
	check *record.Checker
	n     int64 // records read
	pos   int64 // byte offset of the next record's length prefix
	count *countingReader
	at    place
}

func (p *delimitedProto) place() place { return p.at }

func (p *delimitedProto) next() ([]byte, error) {
	at := p.pos
	idx := p.n + 1
	size, err := binary.ReadUvarint(p.r)
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, inputErr("%s: record %d at byte offset %d: truncated length prefix", p.path, idx, at)
	case err != nil && p.count.err != nil:
		return nil, inputErr("%s: record %d at byte offset %d: %v", p.path, idx, at, p.count.err)
	case err != nil:
		return nil, inputErr("%s: record %d at byte offset %d: bad length prefix: %v", p.path, idx, at, err)
	}
	head := int64(protowire.SizeVarint(size))
	if size > maxRecordBytes {
		return nil, inputErr("%s: record %d at byte offset %d: length %d is over the per-call limit of %d bytes (a corrupt prefix?)", p.path, idx, at, size, maxRecordBytes)
	}
	rec := make([]byte, size)
	if n, err := io.ReadFull(p.r, rec); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return nil, inputErr("%s: record %d at byte offset %d: truncated: length %d, only %d bytes left", p.path, idx, at, size, n)
		}
		return nil, inputErr("%s: record %d at byte offset %d: %v", p.path, idx, at, err)
	}
	p.n++
	p.pos = at + head + int64(size)
	p.at = place{n: idx, off: at, end: p.pos}
	if reason := sizeReason(rec); reason != "" {
		return nil, &invalidRecord{loc: fmt.Sprintf("%s: record %d at byte offset %d", p.path, idx, at), place: p.at, reason: reason, record: rec}
	}
	if err := p.check.Check(rec); err != nil {
		return nil, &invalidRecord{loc: fmt.Sprintf("%s: record %d at byte offset %d", p.path, idx, at), place: p.at,
			reason: fmt.Sprintf("not a valid %s: %v", p.md.FullName(), err), record: rec}
	}
	return rec, nil
}

// countingReader counts the bytes read and remembers the first read error
// that is not io.EOF, so that a failing disk is not reported as a
// malformed record.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// loadMessage finds message name in a FileDescriptorSet file.
func loadMessage(path, name string) (protoreflect.MessageDescriptor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, inputErr("descriptor set: %v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, inputErr("descriptor set %s: not a FileDescriptorSet: %v", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, inputErr("descriptor set %s: %v", path, err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(name))
	if errors.Is(err, protoregistry.NotFound) {
		var names []string
		files.RangeFiles(func(f protoreflect.FileDescriptor) bool {
			ms := f.Messages()
			for i := range ms.Len() {
				if len(names) < 10 {
					names = append(names, string(ms.Get(i).FullName()))
				}
			}
			return true
		})
		return nil, cli.UsageErr("-proto-message %s: no such message in %s (it has %v)", name, path, names)
	} else if err != nil {
		return nil, inputErr("descriptor set %s: %v", path, err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, cli.UsageErr("-proto-message %s: not a message in %s", name, path)
	}
	// Refused before anything else, rather than when the stream is created.
	if err := zbstream.CheckProtoDescriptor(md); err != nil {
		var ce *zbstream.ConfigError
		if errors.As(err, &ce) {
			return nil, cli.UsageErr("-proto-message %s: %s", name, ce.Reason)
		}
		return nil, cli.UsageErr("-proto-message %s: %v", name, err)
	}
	return md, nil
}

// source opens an input file and reads its records.
type source struct {
	path   string
	format string
	md     protoreflect.MessageDescriptor // for formatProto
	avro   *avroCodec                     // for formatAvro
	table  *tableCodec                    // for formatTableProto
	check  *record.Checker
}

// encoder returns what the lines of a JSON-lines source are sent as, or
// nil when they are sent as they are.
func (s source) encoder() lineEncoder {
	switch {
	case s.avro != nil:
		return s.avro
	case s.table != nil:
		return s.table
	}
	return nil
}

// open opens the file and returns a reader of its records; the returned
// hash, if not nil, sees every byte read.
func (s source) open(withHash bool) (recordReader, hash.Hash, *countingReader, func() error, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, nil, nil, nil, inputErr("%v", err)
	}
	var r io.Reader = f
	var h hash.Hash
	if withHash {
		h = sha256.New()
		r = io.TeeReader(f, h)
	}
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<20)
	if s.format == formatProto {
		return &delimitedProto{path: s.path, r: br, md: s.md, check: s.check, count: cr}, h, cr, f.Close, nil
	}
	return &jsonLines{path: s.path, r: br, check: s.check, enc: s.encoder()}, h, cr, f.Close, nil
}

// describe names records first to last of the file: "lines 3-9 of FILE".
func (s source) describe(first, last int64) string {
	return s.records(first, last) + " of " + s.path
}

// unit is what numbers a record: its line, or its place among records.
func (s source) unit() string {
	if s.format == formatProto {
		return "record"
	}
	return "line"
}

// records names records first to last: "lines 3-9", "record 7".
func (s source) records(first, last int64) string {
	unit := s.unit()
	if first == last {
		return fmt.Sprintf("%s %d", unit, first)
	}
	return fmt.Sprintf("%ss %d-%d", unit, first, last)
}

// prefixSHA256 hashes the first n bytes of the file: what pins the part
// of it the server holds (see pin).
func (s source) prefixSHA256(n int64) (string, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return "", inputErr("%v", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, f, n); err != nil {
		if err == io.EOF {
			return "", inputErr("%s is shorter than the %d bytes the server holds", s.path, n)
		}
		return "", inputErr("%s: %v", s.path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
