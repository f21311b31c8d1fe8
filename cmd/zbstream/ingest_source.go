package main

import (
	"bufio"
	"bytes"
	"context"
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
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
)

// Input formats, as the state file names them.
const (
	ingestFormatJSON  = "json-lines"
	ingestFormatProto = "protobuf-delimited"
)

// ingestMaxRecordBytes bounds one record: the protocol's per-call limit, which a
// record sent alone must fit.
const ingestMaxRecordBytes = core.DefaultMaxCallBytes

// ingestInputErr is an unreadable or malformed input: exit code 3.
func ingestInputErr(format string, a ...any) error {
	return withCode(exitInput, fmt.Errorf(format, a...))
}

// ingestRecordReader yields a file's records in order; io.EOF ends them. Every
// other error is an input error naming the file and the place.
type ingestRecordReader interface {
	next() ([]byte, error)
}

// ingestJSONLines reads a JSON-lines file: every non-empty line is one record, a
// JSON object; blank lines are skipped.
type ingestJSONLines struct {
	path string
	r    *bufio.Reader
	line int64
}

func (j *ingestJSONLines) next() ([]byte, error) {
	for {
		b, err := j.r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, ingestInputErr("%s: reading after line %d: %v", j.path, j.line, err)
		}
		if err != nil && err != io.EOF {
			return nil, ingestInputErr("%s: reading line %d: %v", j.path, j.line+1, err)
		}
		j.line++
		if j.line == 1 {
			b = bytes.TrimPrefix(b, []byte("\ufeff")) // a UTF-8 byte order mark
		}
		rec := bytes.TrimSpace(b)
		if len(rec) == 0 {
			continue
		}
		switch {
		case rec[0] != '{':
			return nil, ingestInputErr("%s:%d: not a JSON object (starts with %q)", j.path, j.line, ingestPreview(rec))
		case !json.Valid(rec):
			return nil, ingestInputErr("%s:%d: malformed JSON: %s", j.path, j.line, ingestJSONProblem(rec))
		case len(rec) > ingestMaxRecordBytes:
			return nil, ingestInputErr("%s:%d: record of %d bytes is over the per-call limit of %d bytes", j.path, j.line, len(rec), ingestMaxRecordBytes)
		}
		return rec, nil
	}
}

// ingestJSONProblem says what is wrong with a line that json.Valid refused.
func ingestJSONProblem(b []byte) string {
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

func ingestPreview(b []byte) string {
	if len(b) > 20 {
		return string(b[:20]) + "..."
	}
	return string(b)
}

// ingestDelimitedProto reads a file of length-delimited protobuf records: each a
// varint length, then that many bytes, which must parse as msg.
type ingestDelimitedProto struct {
	path  string
	r     *bufio.Reader
	md    protoreflect.MessageDescriptor
	n     int64 // records read
	pos   int64 // byte offset of the next record's length prefix
	count *ingestCountingReader
}

func (p *ingestDelimitedProto) next() ([]byte, error) {
	at := p.pos
	idx := p.n + 1
	size, err := binary.ReadUvarint(p.r)
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, ingestInputErr("%s: record %d at byte offset %d: truncated length prefix", p.path, idx, at)
	case err != nil && p.count.err != nil:
		return nil, ingestInputErr("%s: record %d at byte offset %d: %v", p.path, idx, at, p.count.err)
	case err != nil:
		return nil, ingestInputErr("%s: record %d at byte offset %d: bad length prefix: %v", p.path, idx, at, err)
	}
	head := int64(protowire.SizeVarint(size))
	if size > ingestMaxRecordBytes {
		return nil, ingestInputErr("%s: record %d at byte offset %d: length %d is over the per-call limit of %d bytes (a corrupt prefix?)", p.path, idx, at, size, ingestMaxRecordBytes)
	}
	rec := make([]byte, size)
	if n, err := io.ReadFull(p.r, rec); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return nil, ingestInputErr("%s: record %d at byte offset %d: truncated: length %d, only %d bytes left", p.path, idx, at, size, n)
		}
		return nil, ingestInputErr("%s: record %d at byte offset %d: %v", p.path, idx, at, err)
	}
	if err := proto.Unmarshal(rec, dynamicpb.NewMessage(p.md)); err != nil {
		return nil, ingestInputErr("%s: record %d at byte offset %d: not a valid %s: %v", p.path, idx, at, p.md.FullName(), err)
	}
	p.n++
	p.pos = at + head + int64(size)
	return rec, nil
}

// ingestCountingReader counts the bytes read and remembers the first read error
// that is not io.EOF, so that a failing disk is not reported as a
// malformed record.
type ingestCountingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *ingestCountingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// ingestLoadMessage finds message name in a FileDescriptorSet file.
func ingestLoadMessage(path, name string) (protoreflect.MessageDescriptor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, ingestInputErr("descriptor set: %v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, ingestInputErr("descriptor set %s: not a FileDescriptorSet: %v", path, err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, ingestInputErr("descriptor set %s: %v", path, err)
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
		return nil, usageErr("-proto-message %s: no such message in %s (it has %v)", name, path, names)
	} else if err != nil {
		return nil, ingestInputErr("descriptor set %s: %v", path, err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, usageErr("-proto-message %s: not a message in %s", name, path)
	}
	// Refused before anything else, rather than when the stream is created.
	if err := zbstream.CheckProtoDescriptor(md); err != nil {
		var ce *zbstream.ConfigError
		if errors.As(err, &ce) {
			return nil, usageErr("-proto-message %s: %s", name, ce.Reason)
		}
		return nil, usageErr("-proto-message %s: %v", name, err)
	}
	return md, nil
}

// ingestSource opens an input file and reads its records.
type ingestSource struct {
	path   string
	format string
	md     protoreflect.MessageDescriptor // for formatProto
}

// open opens the file and returns a reader of its records; the returned
// hash, if not nil, sees every byte read.
func (s ingestSource) open(withHash bool) (ingestRecordReader, hash.Hash, *ingestCountingReader, func() error, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, nil, nil, nil, ingestInputErr("%v", err)
	}
	var r io.Reader = f
	var h hash.Hash
	if withHash {
		h = sha256.New()
		r = io.TeeReader(f, h)
	}
	cr := &ingestCountingReader{r: r}
	br := bufio.NewReaderSize(cr, 1<<20)
	if s.format == ingestFormatProto {
		return &ingestDelimitedProto{path: s.path, r: br, md: s.md, count: cr}, h, cr, f.Close, nil
	}
	return &ingestJSONLines{path: s.path, r: br}, h, cr, f.Close, nil
}

// ingestBatcher groups records into calls, deterministically: a call takes
// records in file order until it holds maxRecords of them or the next one
// would take its size as sent (each record framed as in a batch) over
// maxBytes; a call always holds at least one record. Given the file's
// content and the two limits, call k is always the same records, so the
// offset of a persistent stream (call k is offset k) names its place in
// the file.
type ingestBatcher struct {
	r          ingestRecordReader
	maxRecords int
	maxBytes   int64
	pending    []byte
	err        error
}

func ingestFramed(rec []byte) int64 {
	return int64(1 + protowire.SizeVarint(uint64(len(rec))) + len(rec))
}

// next returns the next call's records, or io.EOF.
func (b *ingestBatcher) next() ([][]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	var (
		batch [][]byte
		size  int64
	)
	for len(batch) < b.maxRecords {
		rec := b.pending
		b.pending = nil
		if rec == nil {
			var err error
			rec, err = b.r.next()
			if err != nil {
				b.err = err
				break
			}
		}
		if len(batch) > 0 && size+ingestFramed(rec) > b.maxBytes {
			b.pending = rec
			break
		}
		batch = append(batch, rec)
		size += ingestFramed(rec)
	}
	if len(batch) > 0 && (b.err == nil || b.err == io.EOF) {
		return batch, nil
	}
	return nil, b.err
}

// ingestFileInfo is what a full pass over the input learns: its identity, and
// how many records and calls it holds.
type ingestFileInfo struct {
	size    int64
	sha256  string
	records int64
	batches int64
}

// ingestScan reads the whole file once: it validates every record (so that a
// malformed one stops the run before anything is sent), counts records
// and calls, and hashes the content, which identifies the file.
func ingestScan(ctx context.Context, src ingestSource, maxRecords int, maxBytes int64) (ingestFileInfo, error) {
	r, h, cr, closeFile, err := src.open(true)
	if err != nil {
		return ingestFileInfo{}, err
	}
	defer closeFile()
	b := &ingestBatcher{r: r, maxRecords: maxRecords, maxBytes: maxBytes}
	var info ingestFileInfo
	for {
		batch, err := b.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ingestFileInfo{}, err
		}
		info.records += int64(len(batch))
		info.batches++
		if info.batches%1024 == 0 && ctx.Err() != nil {
			return ingestFileInfo{}, context.Cause(ctx)
		}
	}
	// Both formats read to io.EOF, so the hash and the count cover every
	// byte of the file.
	info.sha256 = hex.EncodeToString(h.Sum(nil))
	info.size = cr.n
	return info, nil
}
