package serve

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	"github.com/zbstream/zbstream/server/servertest"
)

// dialServe is a plaintext connection to serve's gRPC endpoint, closed
// when the test ends.
func dialServe(t *testing.T, srv *clitest.Serve) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(strings.TrimPrefix(srv.Endpoint, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestServeArrowStream: serve takes an Arrow stream over Flight DoPut on
// its gRPC endpoint, and "streams records" prints its rows as JSON lines.
func TestServeArrowStream(t *testing.T) {
	srv := cmds.StartServe(t, "-data", filepath.Join(t.TempDir(), "data"), "-log-level", "warn", "-token", "alice:tok-alice:"+clitest.TableA)
	cc := dialServe(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"ann", "bob"}, nil)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{7, 0}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	acks, err := servertest.PutArrow(servertest.OutgoingContext(ctx, "tok-alice", clitest.TableA), flight.NewFlightServiceClient(cc), schema, rec)
	want := []string{`{"ack_up_to_offset":-1,"ack_up_to_records":0}`, `{"ack_up_to_offset":0,"ack_up_to_records":2}`}
	if err != nil || !slices.Equal(acks, want) {
		t.Fatalf("acks %q, %v; want %q and OK", acks, err, want)
	}

	out := cmds.WantCode(t, 0, "streams", "list", "-admin", srv.Admin, "-token", "tok-alice")
	id := regexp.MustCompile(`as-[0-9a-f]{32}`).FindString(out)
	if id == "" {
		t.Fatalf("list: no Arrow stream in\n%s", out)
	}
	out = cmds.WantCode(t, 0, "streams", "show", id, "-admin", srv.Admin, "-token", "tok-alice")
	for _, want := range []string{`record type:\s+arrow\n`, `records:\s+1\n`,
		`received:\s+1 frames, 2 rows\n`, `stored:\s+1 frames, 2 rows\n`, `acknowledged:\s+1 frames, 2 rows\n`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("show: no %s in\n%s", want, out)
		}
	}
	out = cmds.WantCode(t, 0, "streams", "show", id, "-json", "-admin", srv.Admin, "-token", "tok-alice")
	var info admin.StreamInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.Arrow == nil ||
		*info.Arrow != (admin.ArrowCounts{FramesReceived: 1, RowsReceived: 2, FramesStored: 1, RowsStored: 2, FramesAcked: 1, RowsAcked: 2}) {
		t.Fatalf("show -json: %v, %+v; want the call's counts", err, info.Arrow)
	}
	out = cmds.WantCode(t, 0, "streams", "records", id, "-admin", srv.Admin, "-token", "tok-alice")
	if want := `{"user":"ann","n":7}` + "\n" + `{"user":"bob","n":null}` + "\n"; out != want {
		t.Fatalf("records: %q, want %q", out, want)
	}
}
