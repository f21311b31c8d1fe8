package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/record"
)

func TestIngestJSONLinesReader(t *testing.T) {
	in := "\ufeff{\"a\":1}\r\n\r\n   \n\t{\"b\": [1, 2]}  \n{\"c\":\"no newline at the end\"}"
	r := &jsonLines{path: "x.jsonl", r: bufio.NewReader(strings.NewReader(in)), check: testChecker(t)}
	var got []string
	for {
		rec, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(rec))
	}
	want := []string{`{"a":1}`, `{"b": [1, 2]}`, `{"c":"no newline at the end"}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records %q, want %q", got, want)
	}
}

// TestIngestBatcherBytes: calls never pass the byte limit (a record alone
// excepted), hold at most maxRecords, keep every record in order, and
// are the same on every pass.
func TestIngestBatcherBytes(t *testing.T) {
	var recs [][]byte
	for i := range 500 {
		recs = append(recs, bytes.Repeat([]byte{'x'}, (i*37)%130+1))
	}
	pass := func() [][][]byte {
		i := 0
		r := readerFunc(func() ([]byte, error) {
			if i == len(recs) {
				return nil, io.EOF
			}
			i++
			return recs[i-1], nil
		})
		b := &batcher{r: r, maxRecords: 7, maxBytes: 200}
		var calls [][][]byte
		for {
			c, err := b.next()
			if err == io.EOF {
				return calls
			}
			if err != nil {
				t.Fatal(err)
			}
			calls = append(calls, c)
		}
	}
	calls := pass()
	var flat [][]byte
	for k, c := range calls {
		var size int64
		for _, r := range c {
			size += framed(r)
		}
		if len(c) == 0 || len(c) > 7 || (len(c) > 1 && size > 200) {
			t.Fatalf("call %d: %d records, %d bytes", k, len(c), size)
		}
		flat = append(flat, c...)
	}
	if len(flat) != len(recs) {
		t.Fatalf("%d records in calls, want %d", len(flat), len(recs))
	}
	for i := range recs {
		if !bytes.Equal(flat[i], recs[i]) {
			t.Fatalf("record %d out of place", i)
		}
	}
	if again := pass(); fmt.Sprint(again) != fmt.Sprint(calls) {
		t.Fatal("a second pass groups the records differently")
	}
}

type readerFunc func() ([]byte, error)

func (f readerFunc) next() ([]byte, error) { return f() }
func (f readerFunc) place() place          { return place{} }

// TestIngestScanErrors: a directory, an unreadable file and an error in
// the middle are input errors (exit 3).
func TestIngestScanErrors(t *testing.T) {
	dir := t.TempDir()
	src := source{path: dir, format: formatJSON, check: testChecker(t)}
	_, err := scan(context.Background(), src, 10, 1<<20, nil, refuseInvalid)
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != cli.ExitInput {
		t.Fatalf("a directory: %v", err)
	}
	path := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(path, []byte("{}\n{}\nnull\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src.path = path
	_, err = scan(context.Background(), src, 10, 1<<20, nil, refuseInvalid)
	if !errors.As(err, &ee) || ee.Code != cli.ExitInput || !strings.Contains(err.Error(), "a.jsonl:3: not a JSON object") {
		t.Fatalf("null on line 3: %v", err)
	}
}

func testChecker(t *testing.T) *record.Checker {
	t.Helper()
	c, err := checker(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
