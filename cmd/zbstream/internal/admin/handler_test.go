package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

// fixture is a memory store with alice's JSON stream of 5 offsets
// (offset 3 a batch of two records) and bob's stream.
func fixture(t *testing.T) *server.MemoryStore {
	t.Helper()
	st := server.NewMemoryStore()
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for _, m := range []server.StreamMeta{
		{ID: "ps-a", Kind: server.KindPersistent, Table: clitest.TableA, Principal: "alice", RecordType: int32(ingestpb.RecordType_JSON)},
		{ID: "ps-b", Kind: server.KindPersistent, Table: clitest.TableB, Principal: "bob", RecordType: int32(ingestpb.RecordType_JSON)},
	} {
		if _, _, err := st.CreateStream(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var batches []server.Batch
	for off := range int64(5) {
		recs := [][]byte{fmt.Appendf(nil, `{ "i": %d }`, off)}
		if off == 3 {
			recs = append(recs, []byte(`{"i":"3b"}`))
		}
		batches = append(batches, server.Batch{Offset: off, Records: recs})
	}
	if err := st.Append(ctx, "ps-a", batches); err != nil {
		t.Fatal(err)
	}
	return st
}

func get(t *testing.T, ts *httptest.Server, method, path, token string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, body)
		}
	}
	return resp.StatusCode
}

// TestAdminAuthAndVisibility: with tokens, a request needs a known bearer
// token, and a principal sees only its own streams.
func TestAdminAuthAndVisibility(t *testing.T) {
	tokens := lookupIn{
		"tok-alice": {Name: "alice", Tables: []string{clitest.TableA}},
		"tok-bob":   {Name: "bob", Tables: []string{server.AllTables}},
	}
	ts := httptest.NewServer(NewHandler(fixture(t), tokens.lookup, slog.New(slog.DiscardHandler), DefaultLimits()))
	defer ts.Close()

	var e ErrorBody
	if code := get(t, ts, "GET", "/v1/streams", "", &e); code != http.StatusUnauthorized || !strings.Contains(e.Error, "missing") {
		t.Fatalf("no token: %d %q", code, e.Error)
	}
	if code := get(t, ts, "GET", "/v1/streams", "tok-wrong", &e); code != http.StatusUnauthorized || strings.Contains(e.Error, "tok-wrong") {
		t.Fatalf("wrong token: %d %q", code, e.Error)
	}
	var l StreamsList
	if code := get(t, ts, "GET", "/v1/streams", "tok-alice", &l); code != 200 || len(l.Streams) != 1 || l.Streams[0].ID != "ps-a" || l.Streams[0].Watermark != 4 || l.Streams[0].Records != 6 {
		t.Fatalf("alice's list: %d %+v", code, l)
	}
	// bob may write every table, yet sees only his own stream.
	if code := get(t, ts, "GET", "/v1/streams", "tok-bob", &l); code != 200 || len(l.Streams) != 1 || l.Streams[0].ID != "ps-b" {
		t.Fatalf("bob's list: %d %+v", code, l)
	}
	for _, p := range []string{"/v1/streams/ps-a", "/v1/streams/ps-a/records"} {
		if code := get(t, ts, "GET", p, "tok-bob", &e); code != http.StatusNotFound || !strings.Contains(e.Error, "not found") {
			t.Fatalf("bob reads %s: %d %q", p, code, e.Error)
		}
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-none", "tok-alice", &e); code != http.StatusNotFound {
		t.Fatalf("unknown stream: %d", code)
	}
	if code := get(t, ts, "POST", "/v1/streams", "tok-alice", &e); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", code)
	}
	if code := get(t, ts, "GET", "/v2/nothing", "tok-alice", &e); code != http.StatusNotFound {
		t.Fatalf("unknown path: %d", code)
	}
}

// TestAdminRecordsPages: from and limit count offsets; next continues.
func TestAdminRecordsPages(t *testing.T) {
	ts := httptest.NewServer(NewHandler(fixture(t), nil, slog.New(slog.DiscardHandler), DefaultLimits()))
	defer ts.Close()

	var l StreamsList
	if code := get(t, ts, "GET", "/v1/streams", "", &l); code != 200 || len(l.Streams) != 2 {
		t.Fatalf("open-mode list: %d %+v", code, l)
	}
	var p RecordsPage
	if code := get(t, ts, "GET", "/v1/streams/ps-a/records", "", &p); code != 200 || len(p.Records) != 6 || p.Next != 5 || p.Watermark != 4 {
		t.Fatalf("all records: %d %+v", code, p)
	}
	if string(p.Records[0].JSON) != `{"i":0}` && !strings.Contains(string(p.Records[0].JSON), `"i": 0`) {
		t.Fatalf("record 0: %s", p.Records[0].JSON)
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-a/records?from=2&limit=2", "", &p); code != 200 || len(p.Records) != 3 || p.Next != 4 ||
		p.Records[0].Offset != 2 || p.Records[2].Offset != 3 || p.Records[2].Index != 1 {
		t.Fatalf("from=2 limit=2: %d %+v", code, p)
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-a/records?from=4&limit=100", "", &p); code != 200 || len(p.Records) != 1 || p.Next != 5 {
		t.Fatalf("from=4: %d %+v", code, p)
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-a/records?from=9223372036854775807", "", &p); code != 200 || len(p.Records) != 0 {
		t.Fatalf("from=max: %d %+v", code, p)
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-b/records", "", &p); code != 200 || len(p.Records) != 0 || p.Watermark != -1 {
		t.Fatalf("empty stream: %d %+v", code, p)
	}
	var e ErrorBody
	for _, q := range []string{"from=-1", "from=x", "limit=0", "limit=10001", "limit=y"} {
		if code := get(t, ts, "GET", "/v1/streams/ps-a/records?"+q, "", &e); code != http.StatusBadRequest || e.Error == "" {
			t.Fatalf("%s: %d %q", q, code, e.Error)
		}
	}
}

// TestAdminStoreClosed: a closed store answers 503.
func TestAdminStoreClosed(t *testing.T) {
	st := fixture(t)
	ts := httptest.NewServer(NewHandler(st, nil, slog.New(slog.DiscardHandler), DefaultLimits()))
	defer ts.Close()
	st.Close()
	var e ErrorBody
	if code := get(t, ts, "GET", "/v1/streams", "", &e); code != http.StatusServiceUnavailable {
		t.Fatalf("closed store: %d %q", code, e.Error)
	}
}

// TestAdminRecordsPageBytes: a page stops after Limits.PageBytes of records,
// and next continues after the last batch it holds.
func TestAdminRecordsPageBytes(t *testing.T) {
	lim := DefaultLimits()
	lim.PageBytes = 3000
	st := server.NewMemoryStore()
	defer st.Close()
	ctx := context.Background()
	if _, _, err := st.CreateStream(ctx, server.StreamMeta{ID: "ps-big", Kind: server.KindPersistent, Table: clitest.TableA,
		Principal: "anonymous", RecordType: int32(ingestpb.RecordType_PROTO)}); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, lim.PageBytes/3+1)
	var batches []server.Batch
	for off := range int64(4) {
		batches = append(batches, server.Batch{Offset: off, Records: [][]byte{big}})
	}
	if err := st.Append(ctx, "ps-big", batches); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(NewHandler(st, nil, slog.New(slog.DiscardHandler), lim))
	defer ts.Close()
	var p RecordsPage
	if code := get(t, ts, "GET", "/v1/streams/ps-big/records", "", &p); code != 200 || len(p.Records) != 3 || p.Next != 3 || len(p.Records[2].Data) != len(big) {
		t.Fatalf("first page: %d, %d records, next %d", code, len(p.Records), p.Next)
	}
	if code := get(t, ts, "GET", "/v1/streams/ps-big/records?from=3", "", &p); code != 200 || len(p.Records) != 1 || p.Next != 4 {
		t.Fatalf("second page: %d, %d records, next %d", code, len(p.Records), p.Next)
	}
}

// lookupIn is a token table: the tokens of "zbstream serve -token".
type lookupIn map[string]server.Principal

func (l lookupIn) lookup(token string) (server.Principal, bool) {
	p, ok := l[token]
	return p, ok
}
