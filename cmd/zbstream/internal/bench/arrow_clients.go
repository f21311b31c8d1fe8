package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/internal/arrowflight"
)

// arrowBenchSchema is the rows of bench -format arrow: an event as an
// application would have it, a column of each common kind.
var arrowBenchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "user", Type: arrow.BinaryTypes.String},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// arrowBenchColumns names the columns for the table's header.
const arrowBenchColumns = "int64, timestamp, string, float64, int32, bool, nullable string"

// arrowBenchBatch is a batch of n rows of arrowBenchSchema.
func arrowBenchBatch(n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrowBenchSchema)
	defer b.Release()
	for i := range int64(n) {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000_000 + i*1_000))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("user-%06d", i%100_000))
		b.Field(3).(*array.Float64Builder).Append(float64(i%10_000) / 100)
		b.Field(4).(*array.Int32Builder).Append(int32(i % 50))
		b.Field(5).(*array.BooleanBuilder).Append(i%3 != 0)
		if i%4 == 0 {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("order %d of the day", i))
		}
	}
	return b.NewRecordBatch()
}

// jsonLines renders rec's rows as JSON objects, one a row: the same rows
// for the JSON path.
func jsonLines(rec arrow.RecordBatch) ([][]byte, error) {
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		return nil, err
	}
	var out [][]byte
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out, sc.Err()
}

// benchArrow ingests rec n times (or, for n = 0, for about d) through an
// Arrow Flight stream with the default options, then flushes: the
// measure ends when the last row is acknowledged. The stream encodes the
// batch at every ingest, as it would a new one.
func benchArrow(ctx context.Context, t target, rec arrow.RecordBatch, d time.Duration, n int64) (benchMeasure, error) {
	c, err := t.client()
	if err != nil {
		return benchMeasure{}, err
	}
	defer c.Close()
	s, err := arrowflight.New(ctx, c, t.table, rec.Schema())
	if err != nil {
		return benchMeasure{}, cli.ClientErr(err, "-ca-file")
	}
	defer s.Close(ctx) // on an error path: at once if ctx has ended
	var batches int64
	start := time.Now()
	deadline, hardStop := start.Add(d), start.Add(d+d/4)
	for {
		if _, err := s.IngestBatch(ctx, rec); err != nil {
			return benchMeasure{}, cli.ClientErr(err, "-ca-file")
		}
		batches++
		now := time.Now()
		// n batches, unless the machine slows down: then for 1.25 d. The
		// warm-up (n = 0) stops by the clock alone: the stream has no
		// cheap count of batches durable, and the warm-up is not counted.
		if (n > 0 && (batches == n || !now.Before(hardStop))) || (n == 0 && !now.Before(deadline)) {
			break
		}
	}
	return drained(ctx, s, start, batches*rec.NumRows())
}
