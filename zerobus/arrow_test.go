//go:build arrow

package zerobus_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	zerobus "github.com/zbstream/zbstream/zerobus"
)

// The official SDK's Arrow Flight API, tested with go test -tags arrow
// ./zerobus.

// The Arrow API's signatures, fields and defaults, as the official source
// has them, added to the tables of api_test.go when the package is built
// with the tag.
func init() {
	sdk := officialMethods[reflect.TypeFor[*zerobus.ZerobusSdk]()]
	sdk["CreateArrowStream"] = "func(*zerobus.ZerobusSdk, string, []uint8, string, string, *zerobus.ArrowStreamConfigurationOptions) (*zerobus.ZerobusArrowStream, error)"
	sdk["CreateArrowStreamWithHeadersProvider"] = "func(*zerobus.ZerobusSdk, string, []uint8, zerobus.HeadersProvider, *zerobus.ArrowStreamConfigurationOptions) (*zerobus.ZerobusArrowStream, error)"
	officialMethods[reflect.TypeFor[*zerobus.ZerobusArrowStream]()] = map[string]string{
		"IngestBatch":       "func(*zerobus.ZerobusArrowStream, []uint8) (int64, error)",
		"WaitForOffset":     "func(*zerobus.ZerobusArrowStream, int64) error",
		"Flush":             "func(*zerobus.ZerobusArrowStream) error",
		"Close":             "func(*zerobus.ZerobusArrowStream) error",
		"GetUnackedBatches": "func(*zerobus.ZerobusArrowStream) ([][]uint8, error)",
		"IsClosed":          "func(*zerobus.ZerobusArrowStream) bool",
	}
	officialFuncs["func() *zerobus.ArrowStreamConfigurationOptions"] = zerobus.DefaultArrowStreamConfigurationOptions
	officialFields[reflect.TypeFor[zerobus.ArrowStreamConfigurationOptions]()] = []field{
		{"MaxInflightBatches", "uint64"},
		{"Recovery", "zerobus.RecoverySetting"},
		{"RecoveryTimeoutMs", "uint64"},
		{"RecoveryBackoffMs", "uint64"},
		{"RecoveryRetries", "uint32"},
		{"ServerLackOfAckTimeoutMs", "uint64"},
		{"FlushTimeoutMs", "uint64"},
		{"ConnectionTimeoutMs", "uint64"},
		{"IPCCompression", "zerobus.IPCCompressionType"},
		{"StreamPausedMaxWaitTimeMs", "*uint64"},
	}
}

func TestArrowConstantsAndDefaults(t *testing.T) {
	for _, c := range []struct {
		got, want int8
	}{
		{int8(zerobus.RecoveryEnabled), 0}, {int8(zerobus.RecoveryDisabled), 1},
		{int8(zerobus.IPCCompressionDefault), 0}, {int8(zerobus.IPCCompressionNone), 1},
		{int8(zerobus.IPCCompressionLZ4Frame), 2}, {int8(zerobus.IPCCompressionZstd), 3},
	} {
		if c.got != c.want {
			t.Errorf("constant %d, want %d", c.got, c.want)
		}
	}
	want := zerobus.ArrowStreamConfigurationOptions{
		MaxInflightBatches: 1_000, Recovery: zerobus.RecoveryEnabled, RecoveryTimeoutMs: 15_000,
		RecoveryBackoffMs: 2_000, RecoveryRetries: 4, ServerLackOfAckTimeoutMs: 60_000,
		FlushTimeoutMs: 300_000, ConnectionTimeoutMs: 30_000, IPCCompression: zerobus.IPCCompressionNone,
	}
	if got := zerobus.DefaultArrowStreamConfigurationOptions(); !reflect.DeepEqual(*got, want) {
		t.Errorf("defaults %+v, want %+v", *got, want)
	}
}

var sensorSchema = arrow.NewSchema([]arrow.Field{
	{Name: "device_name", Type: arrow.BinaryTypes.String},
	{Name: "temperature", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// schemaIPC is schema as the official example writes it: an IPC stream
// with no batch.
func schemaIPC(t *testing.T, schema *arrow.Schema) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sensorBatch is an IPC stream of one batch of n rows, from row first: a
// device name and a temperature, null for every third row.
func sensorBatch(t *testing.T, first, n int) []byte {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sensorSchema)
	defer b.Release()
	for i := first; i < first+n; i++ {
		b.Field(0).(*array.StringBuilder).Append("sensor-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)))
		if i%3 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(float64(i) / 4)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sensorSchema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rowsOf decodes IPC streams into rows as JSON-like strings, in order.
func rowsOf(t *testing.T, streams [][]byte) []string {
	t.Helper()
	var rows []string
	for _, s := range streams {
		r, err := ipc.NewReader(bytes.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			rows = append(rows, recordRows(r.RecordBatch())...)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	return rows
}

func recordRows(rec arrow.RecordBatch) []string {
	var rows []string
	for i := range int(rec.NumRows()) {
		var row []string
		for _, col := range rec.Columns() {
			row = append(row, col.ValueStr(i))
		}
		rows = append(rows, strings.Join(row, ","))
	}
	return rows
}

// TestArrowAPI: a program written for the official Arrow API, on the
// reference server: batches in, each at its offset, waited for, flushed,
// closed; the server holds every row once, as sent, under the schema the
// stream was created with; the closed stream refuses more.
func TestArrowAPI(t *testing.T) {
	for _, codec := range []zerobus.IPCCompressionType{zerobus.IPCCompressionDefault, zerobus.IPCCompressionLZ4Frame, zerobus.IPCCompressionZstd} {
		l := startLocalT(t)
		sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		opts := zerobus.DefaultArrowStreamConfigurationOptions()
		opts.IPCCompression = codec
		st, err := sdk.CreateArrowStream(testTable, schemaIPC(t, sensorSchema), testClientID, testClientSecret, opts)
		if err != nil {
			t.Fatal(err)
		}
		if st.IsClosed() {
			t.Fatal("a new stream is closed")
		}
		if _, err := st.GetUnackedBatches(); err == nil || asZerobus(t, err).Retryable() {
			t.Errorf("GetUnackedBatches of a running stream: %v, want a non-retryable error", err)
		}
		var sent [][]byte
		for i, n := range []int{1, 2, 3, 500} {
			b := sensorBatch(t, 10*i, n)
			sent = append(sent, b)
			off, err := st.IngestBatch(b)
			if err != nil || off != int64(i) {
				t.Fatalf("batch %d: offset %d, %v", i, off, err)
			}
			if i == 1 {
				if err := st.WaitForOffset(off); err != nil {
					t.Fatalf("WaitForOffset(%d): %v", off, err)
				}
			}
		}
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if !st.IsClosed() {
			t.Error("a closed stream is not closed")
		}
		if unacked, err := st.GetUnackedBatches(); err != nil || len(unacked) != 0 {
			t.Errorf("GetUnackedBatches after a clean close: %d, %v", len(unacked), err)
		}
		for name, err := range map[string]error{
			"IngestBatch": func() error { _, err := st.IngestBatch(sent[0]); return err }(),
			"Flush":       st.Flush(),
			"Wait":        st.WaitForOffset(0),
		} {
			if err == nil || asZerobus(t, err).Message != "Arrow stream has been closed" {
				t.Errorf("%s after Close: %v", name, err)
			}
		}
		sdk.Free()

		got := storedArrowRows(t, l)
		if want := rowsOf(t, sent); !slices.Equal(got, want) {
			t.Errorf("codec %d: the server holds %d rows %q..., want %d %q...", codec, len(got), head(got), len(want), head(want))
		}
	}
}

func head(rows []string) []string { return rows[:min(3, len(rows))] }

// storedArrowRows returns the rows of every Arrow stream of testTable.
func storedArrowRows(t *testing.T, l *local) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	streams, err := l.Server.Streams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, m := range streams {
		if m.Table != testTable {
			continue
		}
		_, recs, err := l.Server.ArrowRecords(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			rows = append(rows, recordRows(r)...)
			r.Release()
		}
	}
	return rows
}

// TestArrowRefusals: bad schema bytes, a batch of another schema and bad
// options are non-retryable errors, and nothing is sent.
func TestArrowRefusals(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	create := func(schema []byte, o *zerobus.ArrowStreamConfigurationOptions) error {
		st, err := sdk.CreateArrowStream(testTable, schema, testClientID, testClientSecret, o)
		if err == nil {
			_ = st.Close()
		}
		return err
	}
	withBatch := sensorBatch(t, 0, 1)
	for name, c := range map[string]struct {
		schema []byte
		opts   *zerobus.ArrowStreamConfigurationOptions
		want   string
	}{
		"no schema bytes":   {nil, nil, "schemaIpcBytes must not be empty"},
		"not IPC":           {[]byte("not arrow at all"), nil, "not an Arrow IPC stream"},
		"a batch too":       {withBatch, nil, "schema only"},
		"truncated":         {schemaIPC(t, sensorSchema)[:9], nil, "not an Arrow IPC stream"},
		"unknown codec":     {schemaIPC(t, sensorSchema), &zerobus.ArrowStreamConfigurationOptions{IPCCompression: 9}, "IPC compression"},
		"unknown recovery":  {schemaIPC(t, sensorSchema), &zerobus.ArrowStreamConfigurationOptions{Recovery: 7}, "recovery setting"},
		"a table not yours": {schemaIPC(t, sensorSchema), nil, ""},
	} {
		var err error
		if name == "a table not yours" {
			var st *zerobus.ZerobusArrowStream
			if st, err = sdk.CreateArrowStream(otherTable, c.schema, testClientID, testClientSecret, c.opts); err == nil {
				_ = st.Close()
			}
		} else {
			err = create(c.schema, c.opts)
		}
		if err == nil || asZerobus(t, err).Retryable() || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a non-retryable error saying %q", name, err, c.want)
		}
	}

	st, err := sdk.CreateArrowStream(testTable, schemaIPC(t, sensorSchema), testClientID, testClientSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, other)
	b.Field(0).(*array.Int32Builder).Append(1)
	rec := b.NewRecordBatch()
	b.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(other))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	rec.Release()
	for name, batch := range map[string][]byte{"another schema": buf.Bytes(), "garbage": []byte("nope"), "schema only": schemaIPC(t, sensorSchema)} {
		if off, err := st.IngestBatch(batch); err == nil || off != -1 || asZerobus(t, err).Retryable() {
			t.Errorf("%s: offset %d, %v: want -1 and a non-retryable error", name, off, err)
		}
	}
	if st.IsClosed() {
		t.Error("a refused batch closed the stream")
	}
	if off, err := st.IngestBatch(sensorBatch(t, 0, 2)); err != nil || off != 0 {
		t.Errorf("a good batch after refusals: offset %d, %v", off, err)
	}
}

// silentFlight is a Flight server that answers the schema with the ready
// signal and never acknowledges a frame, and records the metadata of
// every DoPut.
type silentFlight struct {
	flight.BaseFlightServer
	mu     sync.Mutex
	md     []metadata.MD
	frames int
}

func (f *silentFlight) DoPut(st flight.FlightService_DoPutServer) error {
	md, _ := metadata.FromIncomingContext(st.Context())
	f.mu.Lock()
	f.md = append(f.md, md)
	f.mu.Unlock()
	if _, err := st.Recv(); err != nil {
		return err
	}
	if err := st.Send(&flight.PutResult{AppMetadata: []byte(`{"ack_up_to_offset":-1,"ack_up_to_records":0}`)}); err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				<-st.Context().Done() // acks never come: the client gives up
			}
			return nil
		}
		f.mu.Lock()
		f.frames++
		f.mu.Unlock()
	}
}

// TestArrowUnackedAfterFailedClose: against a server that never acks, a
// Close bounded by FlushTimeoutMs fails with a retryable error, and
// GetUnackedBatches returns every batch, as IPC streams that hold the
// rows sent; the headers provider's headers reached the server.
func TestArrowUnackedAfterFailedClose(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &silentFlight{}
	srv := grpc.NewServer()
	flight.RegisterFlightServiceServer(srv, f)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	defer func() { srv.Stop(); <-done }()

	sdk, err := zerobus.NewZerobusSdk("http://"+lis.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	opts := zerobus.DefaultArrowStreamConfigurationOptions()
	opts.FlushTimeoutMs = 300
	opts.Recovery = zerobus.RecoveryDisabled
	st, err := sdk.CreateArrowStreamWithHeadersProvider(testTable, schemaIPC(t, sensorSchema), &staticProvider{token: "tok", table: testTable}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := range 3 {
		b := sensorBatch(t, 100*i, 4+i)
		sent = append(sent, b)
		if _, err := st.IngestBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(); err == nil || !asZerobus(t, err).Retryable() {
		t.Errorf("Flush against a silent server: %v, want a retryable timeout", err)
	}
	err = st.Close()
	if err == nil || !errors.Is(err, zbstream.ErrCloseTimeout) {
		t.Errorf("Close against a silent server: %v, want a close timeout", err)
	}
	if !st.IsClosed() {
		t.Error("the stream is not closed after Close")
	}
	unacked, err := st.GetUnackedBatches()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rowsOf(t, unacked), rowsOf(t, sent); !slices.Equal(got, want) {
		t.Errorf("unacked rows %q, want %q", got, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.md) == 0 || strings.Join(f.md[0].Get("authorization"), "") != "Bearer tok" ||
		strings.Join(f.md[0].Get("x-databricks-zerobus-table-name"), "") != testTable {
		t.Errorf("DoPut metadata %v, want the provider's headers", f.md)
	}
}

// TestArrowRecovers: the server drops the call mid-stream and, on the
// next call, acknowledges a batch in part before dropping again; the
// drop-in's stream reconnects each time and every row is stored, the
// rows of the acknowledged part once.
func TestArrowRecovers(t *testing.T) {
	l := startLocalT(t)
	drop := l.Server.Inject(server.Match{Table: testTable}, server.Fault{Kind: server.FaultDrop, After: 2})
	partial := l.Server.Inject(server.Match{Table: testTable}, server.Fault{Kind: server.FaultPartialAck, After: 2})
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	opts := zerobus.DefaultArrowStreamConfigurationOptions()
	opts.RecoveryBackoffMs = 1
	st, err := sdk.CreateArrowStream(testTable, schemaIPC(t, sensorSchema), testClientID, testClientSecret, opts)
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := range 6 {
		b := sensorBatch(t, 100*i, 3+i)
		sent = append(sent, b)
		if _, err := st.IngestBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if drop.Hits() != 1 || partial.Hits() != 1 {
		t.Fatalf("fault hits: drop %d, partial ack %d; want 1 each", drop.Hits(), partial.Hits())
	}
	got := storedArrowRows(t, l)
	seen := map[string]int{}
	for _, r := range got {
		seen[r]++
	}
	for _, r := range rowsOf(t, sent) {
		if seen[r] == 0 {
			t.Errorf("row %q was not stored", r)
		}
	}
	if extra := len(got) - len(rowsOf(t, sent)); extra < 0 || extra > 2*(3+5) {
		t.Errorf("%d rows stored for %d sent", len(got), len(rowsOf(t, sent)))
	}
}
