package arrowstream_test

// The official Arrow Flight scenarios of batches given as Arrow IPC bytes,
// and of dictionary-encoded columns (see scenarios_test.go).

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/arrowstream"
)

// ipcOf returns the rows with ids from .. from+n-1 as an IPC stream of
// testSchema.
func ipcOf(t *testing.T, from, n int64) []byte {
	t.Helper()
	rec := batch(from, n)
	defer rec.Release()
	return ipcBytes(t, testSchema, rec)
}

// test_ingest_ipc_batch_basic and test_ingest_ipc_batch_multiple: IPC
// batches get offsets 0, 1, 2, are sent one frame each and acknowledged.
func TestScenarioIngestIPCBatch(t *testing.T) {
	for _, batches := range []int64{1, 3} {
		f, s, ctx := scenario(t, &fakeServer{})
		for i := range batches {
			off, err := s.IngestIPC(ctx, ipcOf(t, 3*i, 3))
			if err != nil || off != i {
				t.Fatalf("IngestIPC %d = %d, %v", i, off, err)
			}
			if err := s.Wait(ctx, off); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.framesOn(); !slices.Equal(got, []int{int(batches)}) {
			t.Fatalf("frames per call %v; want [%d]", got, batches)
		}
		landed(t, f, 3*batches)
	}
}

// test_ingest_ipc_batch_invalid_bytes: bytes that are no IPC stream are
// refused with an error, nothing is sent, and the stream goes on.
func TestScenarioIngestIPCBatchInvalidBytes(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{})
	if _, err := s.IngestIPC(ctx, []byte("not valid arrow ipc")); err == nil {
		t.Fatal("IngestIPC of garbage accepted")
	}
	if n := f.counts().frames; n != 0 {
		t.Fatalf("%d frames sent for refused bytes", n)
	}
	if off, err := s.IngestIPC(ctx, ipcOf(t, 0, 1)); err != nil || off != 0 {
		t.Fatalf("IngestIPC after the refusal = %d, %v", off, err)
	}
	flushLanded(t, ctx, s, f, 1)
}

// test_ingest_ipc_batch_after_close_rejected: after Close, IPC bytes are
// refused too.
func TestScenarioIngestIPCBatchAfterCloseRejected(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{})
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IngestIPC(ctx, ipcOf(t, 0, 1)); !errors.Is(err, zbstream.ErrClosed) {
		t.Fatalf("IngestIPC after Close = %v; want ErrClosed", err)
	}
	if n := f.counts().frames; n != 0 {
		t.Fatalf("%d frames sent after Close", n)
	}
}

// test_ingest_ipc_batch_recovery: an IPC batch in flight when the call
// drops is replayed on the new call and acknowledged there.
func TestScenarioIngestIPCBatchRecovery(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{script: dropAt(1)})
	for id := range int64(2) {
		off, err := s.IngestIPC(ctx, ipcOf(t, id, 1))
		if err != nil || off != id {
			t.Fatalf("IngestIPC = %d, %v", off, err)
		}
		if err := s.Wait(ctx, off); err != nil {
			t.Fatalf("Wait(%d) = %v", off, err)
		}
	}
	if got := f.framesOn(); !slices.Equal(got, []int{2, 1}) {
		t.Fatalf("frames per call %v; want [2 1]", got)
	}
	landed(t, f, 2)
}

// test_ingest_ipc_batch_unacked_returns_record_batch: after a failure,
// the batch ingested as IPC bytes comes back from Unacked as a record
// batch equal to the one encoded, schema and columns.
func TestScenarioIngestIPCBatchUnackedReturnsRecordBatch(t *testing.T) {
	_, s, ctx := scenario(t, &fakeServer{script: func(conn, frame int) act { return act{code: codes.InvalidArgument} }}, arrowstream.WithoutRecovery())
	off, err := s.IngestIPC(ctx, ipcOf(t, 42, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, off); err == nil {
		t.Fatal("Wait of the refused batch = nil")
	}
	s.Close(ctx)
	u := s.Unacked()
	defer func() {
		for _, r := range u {
			r.Release()
		}
	}()
	want := batch(42, 2)
	defer want.Release()
	if len(u) != 1 || !u[0].Schema().Equal(want.Schema()) || !array.RecordEqual(u[0], want) {
		t.Fatalf("Unacked = %v; want the ingested batch %v", u, want)
	}
}

// test_ingest_ipc_batch_schema_mismatch: IPC bytes of other columns are
// refused with ErrSchemaMismatch.
func TestScenarioIngestIPCBatchSchemaMismatch(t *testing.T) {
	f := startServer(t, &fakeServer{})
	s := scenarioOpen(t, f)
	other := otherBatch()
	defer other.Release()
	if _, err := s.IngestIPC(testCtx(t), ipcBytes(t, other.Schema(), other)); !errors.Is(err, arrowstream.ErrSchemaMismatch) {
		t.Fatalf("IngestIPC of other columns = %v; want ErrSchemaMismatch", err)
	}
}

// test_ingest_ipc_batch_with_compression: a stream that compresses its
// frames (Zstd) takes IPC bytes written without compression, and with
// another codec (LZ4), re-encoding them with its own.
func TestScenarioIngestIPCBatchWithCompression(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{}, arrowstream.WithCompression(arrowstream.CompressionZstd))
	var lz4 bytes.Buffer // rows 3..5, their IPC bodies LZ4 compressed
	w := ipc.NewWriter(&lz4, ipc.WithSchema(testSchema), ipc.WithLZ4())
	rec := batch(3, 3)
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i, b := range [][]byte{ipcOf(t, 0, 3), lz4.Bytes()} {
		if off, err := s.IngestIPC(ctx, b); err != nil || off != int64(i) {
			t.Fatalf("IngestIPC %d = %d, %v", i, off, err)
		}
	}
	flushLanded(t, ctx, s, f, 6)
}

// test_mixed_ingest_batch_and_ipc: record batches and IPC bytes
// interleave on one stream, with consecutive offsets, one frame each.
func TestScenarioMixedIngestBatchAndIPC(t *testing.T) {
	f, s, ctx := scenario(t, &fakeServer{})
	offs := []int64{ingestAt(t, ctx, s, 0, 2)}
	off, err := s.IngestIPC(ctx, ipcOf(t, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	offs = append(offs, off, ingestAt(t, ctx, s, 5, 2))
	if !slices.Equal(offs, []int64{0, 1, 2}) {
		t.Fatalf("offsets %v; want [0 1 2]", offs)
	}
	for _, off := range offs {
		if err := s.Wait(ctx, off); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.counts().frames; n != 3 {
		t.Fatalf("%d frames; want 3", n)
	}
	landed(t, f, 7)
}

// dictSchema is the official dictionary scenarios' shape: an id and a
// dictionary-encoded string category.
var dictSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "category", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
}, nil)

// test_ingest_dict_batch: the official SDKs send dictionary-encoded
// columns (dictionary messages between batches); ours refuses a schema
// with one when the stream opens, before any call (docs/protocol.md §12.3
// and §12.8), naming the field.
func TestScenarioIngestDictBatch(t *testing.T) {
	f := startServer(t, &fakeServer{})
	_, err := arrowstream.New(testCtx(t), client(t, f), "main.default.t", dictSchema)
	var ce *zbstream.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, `"category"`) {
		t.Fatalf("New with a dictionary field = %v; want a ConfigError naming it", err)
	}
	if conns := f.counts().conns; conns != 0 {
		t.Fatalf("%d calls for a refused schema", conns)
	}
}

// test_ingest_dict_ipc_batch: IPC bytes whose batch has a
// dictionary-encoded column are refused by a stream of plain columns, as
// any other schema is; nothing is sent.
func TestScenarioIngestDictIPCBatch(t *testing.T) {
	f := startServer(t, &fakeServer{})
	s := scenarioOpen(t, f)
	rec := dictBatch(t)
	defer rec.Release()
	if _, err := s.IngestIPC(testCtx(t), ipcBytes(t, dictSchema, rec)); !errors.Is(err, arrowstream.ErrSchemaMismatch) {
		t.Fatalf("IngestIPC of a dictionary batch = %v; want ErrSchemaMismatch", err)
	}
	if n := f.counts().frames; n != 0 {
		t.Fatalf("%d frames sent", n)
	}
}

// dictBatch returns three rows of dictSchema, two categories.
func dictBatch(t *testing.T) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, dictSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	cat := b.Field(1).(*array.BinaryDictionaryBuilder)
	for _, v := range []string{"cat_a", "cat_b", "cat_a"} {
		if err := cat.AppendString(v); err != nil {
			t.Fatal(err)
		}
	}
	return b.NewRecordBatch()
}
