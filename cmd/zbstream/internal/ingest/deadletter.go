package ingest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/internal/atomicfile"
)

// deadLetter is one line of a dead-letter file (-skip-invalid): a
// record the server would refuse, set aside instead of sent. Line (JSON
// lines) or Index (protobuf, from 1) says which record it is, Offset where
// it starts in the file, Reason why it was refused. The record itself is
// Record when it is valid UTF-8, and RecordBase64 otherwise (and always
// for protobuf), so that every byte survives: a JSON string cannot hold
// invalid UTF-8.
type deadLetter struct {
	Line         int64  `json:"line,omitempty"`
	Index        int64  `json:"index,omitempty"`
	Offset       int64  `json:"offset"`
	Reason       string `json:"reason"`
	Record       string `json:"record,omitempty"`
	RecordBase64 []byte `json:"record_base64,omitempty"`
}

// setAside collects the records a scan sets aside, and writes them to
// the dead-letter file if there is one. The file is written whole and
// replaced at once (commit), never appended to: the records set aside are
// a function of the input's content, so a rerun that rewrites the file
// cannot duplicate a line.
type setAside struct {
	format string
	path   string           // the dead-letter file, "" for none
	file   *atomicfile.File // nil: no dead-letter file
	w      *bufio.Writer
	enc    *json.Encoder
	bad    []*invalidRecord // without their bytes
}

// newSetAside starts a dead-letter file at path, or none if path is "".
func newSetAside(format, path string) (*setAside, error) {
	a := &setAside{format: format, path: path}
	if path == "" {
		return a, nil
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, cli.WithCode(cli.ExitFailure, fmt.Errorf("dead-letter file %s: %w", path, err))
	}
	a.file, a.w = f, bufio.NewWriter(f)
	a.enc = json.NewEncoder(a.w)
	a.enc.SetEscapeHTML(false)
	return a, nil
}

// add sets bad aside.
func (a *setAside) add(bad *invalidRecord) error {
	if a.file != nil {
		dl := deadLetter{Offset: bad.place.off, Reason: bad.reason}
		if a.format == formatProto {
			dl.Index, dl.RecordBase64 = bad.place.n, bad.record
		} else if dl.Line = bad.place.n; utf8.Valid(bad.record) {
			dl.Record = string(bad.record)
		} else {
			dl.RecordBase64 = bad.record
		}
		if err := a.enc.Encode(dl); err != nil {
			return cli.WithCode(cli.ExitFailure, fmt.Errorf("dead-letter file %s: %w", a.path, err))
		}
	}
	bad.record = nil // only the dead-letter file keeps it
	a.bad = append(a.bad, bad)
	return nil
}

// places returns the line or record numbers of the records set aside, in
// file order.
func (a *setAside) places() []int64 {
	n := make([]int64, len(a.bad))
	for i, b := range a.bad {
		n[i] = b.place.n
	}
	return n
}

// commit puts the dead-letter file in place (none: nothing to do).
func (a *setAside) commit() error {
	if a.file == nil {
		return nil
	}
	f := a.file
	a.file = nil
	if err := a.w.Flush(); err != nil {
		f.Abort()
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("dead-letter file %s: %w", a.path, err))
	}
	if err := f.Commit(); err != nil {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("dead-letter file %s: %w", a.path, err))
	}
	return nil
}

// abort drops the dead-letter file being written; an earlier one stays.
func (a *setAside) abort() {
	if a.file != nil {
		a.file.Abort()
		a.file = nil
	}
}
