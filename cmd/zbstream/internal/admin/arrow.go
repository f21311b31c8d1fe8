package admin

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbstream/zbstream/server"
)

// An Arrow stream's frame (one stored batch) shown as its rows: one
// RecordInfo per row, at the frame's offset and the row's index in it,
// each a JSON object of the row's columns in schema order (arrow-go's
// values for JSON: a struct as an object, a list as an array, binary as
// base64, a timestamp as its text). A frame that does not decode is shown
// as its bytes, as a record that does not decode is for the other formats.

// arrowRows returns the rows of Arrow stream m's batch b.
func arrowRows(m server.StreamMeta, b server.Batch) []RecordInfo {
	_, recs, err := server.DecodeArrow(m, []server.Batch{b})
	if err != nil {
		return rawRecords(b)
	}
	defer recs[0].Release()
	rec := recs[0]
	out := make([]RecordInfo, 0, rec.NumRows())
	for i := range int(rec.NumRows()) {
		row, err := arrowRow(rec, i)
		if err != nil {
			return rawRecords(b)
		}
		out = append(out, RecordInfo{Offset: b.Offset, Index: i, JSON: row})
	}
	return out
}

// rawRecords shows a batch's records as bytes.
func rawRecords(b server.Batch) []RecordInfo {
	out := make([]RecordInfo, len(b.Records))
	for i, r := range b.Records {
		out[i] = RecordInfo{Offset: b.Offset, Index: i, Data: r}
	}
	return out
}

// arrowRow is row i of rec as a JSON object. A value JSON cannot hold (a
// NaN) is shown as its text; a batch whose buffers arrow-go cannot read is
// an error, not a panic.
func arrowRow(rec arrow.RecordBatch, i int) (row json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			row, err = nil, fmt.Errorf("row %d: %v", i, r)
		}
	}()
	var buf bytes.Buffer
	buf.WriteByte('{')
	for c, col := range rec.Columns() {
		if c > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(rec.ColumnName(c))
		buf.Write(name)
		buf.WriteByte(':')
		v, err := json.Marshal(col.GetOneForMarshal(i))
		if err != nil {
			v, _ = json.Marshal(col.ValueStr(i))
		}
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
