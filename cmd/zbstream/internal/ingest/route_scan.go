package ingest

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/zbstream/zbstream/record"
)

// router hands on the records of r and notes each one's table, the
// top-level string field of the record named field. A record without a
// usable table is an *invalidRecord, as one the server would refuse:
// it ends the run before anything is sent, or is set aside
// (-skip-invalid).
type router struct {
	r     recordReader
	path  string
	field string
	table string // of the record last returned
}

func (r *router) place() place { return r.r.place() }

func (r *router) next() ([]byte, error) {
	rec, err := r.r.next()
	if err != nil {
		return nil, err
	}
	table, reason := tableOf(rec, r.field)
	if reason != "" {
		at := r.r.place()
		return nil, &invalidRecord{loc: fmt.Sprintf("%s:%d", r.path, at.n), place: at, reason: reason, record: rec}
	}
	r.table = table
	return rec, nil
}

// tableOf returns the table named by rec's top-level field field,
// or why there is none: no such field, one that is not a string, one
// given twice, or a string that is not catalog.schema.table. rec is a
// valid JSON object (the server's rules were checked first).
func tableOf(rec []byte, field string) (table, reason string) {
	dec := json.NewDecoder(bytes.NewReader(rec))
	if _, err := dec.Token(); err != nil { // the object's '{'
		return "", fmt.Sprintf("no table: %v", err)
	}
	found := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", fmt.Sprintf("no table: %v", err)
		}
		if key != field {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", fmt.Sprintf("no table: %v", err)
			}
			continue
		}
		if found {
			return "", fmt.Sprintf("field %q appears twice: which table is meant?", field)
		}
		found = true
		v, err := dec.Token()
		if err != nil {
			return "", fmt.Sprintf("no table: %v", err)
		}
		s, ok := v.(string)
		if !ok {
			var raw json.RawMessage
			_ = dec.Decode(&raw) // skip the rest of an object or array
			return "", fmt.Sprintf("field %q is not a string", field)
		}
		if err := record.CheckTable(s); err != nil {
			return "", fmt.Sprintf("field %q is %q, not a table name (catalog.schema.table)", field, s)
		}
		table = s
	}
	if !found {
		return "", fmt.Sprintf("no field %q naming the record's table", field)
	}
	return table, ""
}

// routedCall is call k of a table: its records, their size as sent,
// and where its first and last records are in the file.
type routedCall struct {
	table       string
	k           int64
	records     [][]byte
	size        int64
	first, last place
}

// routedBatcher groups each table's records into calls, as
// batcher does for one table, and counts every table's records and
// calls: a table's call k is always the same records, whatever the other
// tables' records around them, so offset k of the table's stream names
// its place in the file.
type routedBatcher struct {
	maxRecords int
	maxBytes   int64
	open       map[string]*routedCall // the call being filled, per table
	counts     map[string]*tableState // records and calls so far, per table
}

func newRoutedBatcher(maxRecords int, maxBytes int64) *routedBatcher {
	return &routedBatcher{maxRecords: maxRecords, maxBytes: maxBytes,
		open: map[string]*routedCall{}, counts: map[string]*tableState{}}
}

// add adds table's record rec, at at, and returns the calls it completes
// (none, or the one rec does not fit in, or rec's own when it fills it).
func (b *routedBatcher) add(table string, rec []byte, at place) []*routedCall {
	var done []*routedCall
	c := b.open[table]
	if c != nil && c.size+framed(rec) > b.maxBytes {
		done = append(done, c)
		c = nil
	}
	if c == nil {
		cnt := b.counts[table]
		if cnt == nil {
			cnt = &tableState{}
			b.counts[table] = cnt
		}
		c = &routedCall{table: table, k: cnt.Batches, first: at}
		cnt.Batches++
		b.open[table] = c
	}
	c.records = append(c.records, rec)
	c.size += framed(rec)
	c.last = at
	b.counts[table].Records++
	if len(c.records) == b.maxRecords {
		done = append(done, c)
		c = nil
	}
	if c == nil {
		delete(b.open, table)
	}
	return done
}

// rest returns the calls still being filled at the end of the file,
// ordered by table.
func (b *routedBatcher) rest() []*routedCall {
	out := make([]*routedCall, 0, len(b.open))
	for _, c := range b.open {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, c *routedCall) int { return strings.Compare(a.table, c.table) })
	clear(b.open)
	return out
}

// routed reads src's records in order, each with its table, and
// gives every completed call to each; skip decides on the records that
// cannot be sent (see skipper). It returns the batcher, whose counts
// then hold every table's records and calls.
func routed(ctx context.Context, src source, field string, maxRecords int, maxBytes int64, withHash bool,
	skip func(*invalidRecord) error, each func(*routedCall) error) (*routedBatcher, fileInfo, error) {
	rr, h, cr, closeFile, err := src.open(withHash)
	if err != nil {
		return nil, fileInfo{}, err
	}
	defer closeFile()
	router := &router{r: rr, path: src.path, field: field}
	r := &skipper{r: router, skip: skip}
	b := newRoutedBatcher(maxRecords, maxBytes)
	var info fileInfo
	for {
		rec, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fileInfo{}, err
		}
		info.records++
		for _, c := range b.add(router.table, rec, r.place()) {
			info.batches++
			if err := each(c); err != nil {
				return nil, fileInfo{}, err
			}
		}
		if info.records%1024 == 0 && ctx.Err() != nil {
			return nil, fileInfo{}, context.Cause(ctx)
		}
	}
	for _, c := range b.rest() {
		info.batches++
		if err := each(c); err != nil {
			return nil, fileInfo{}, err
		}
	}
	if h != nil {
		info.sha256 = hex.EncodeToString(h.Sum(nil))
	}
	info.size = cr.n
	return b, info, nil
}
