package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/record"
)

// ordersTable is a Unity Catalog table definition as the tables API
// returns it.
const ordersTable = `{"name": "orders", "catalog_name": "main", "schema_name": "sales", "full_name": "main.sales.orders",
 "columns": [
  {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "nullable": false},
  {"name": "customer", "type_name": "STRING", "type_text": "string", "position": 1, "nullable": true},
  {"name": "placed_at", "type_name": "TIMESTAMP", "type_text": "timestamp", "position": 2, "nullable": true},
  {"name": "lines", "type_name": "ARRAY", "type_text": "array<struct<sku:string,qty:int>>", "type_json": "{\"name\":\"lines\",\"type\":{\"type\":\"array\",\"elementType\":{\"type\":\"struct\",\"fields\":[{\"name\":\"sku\",\"type\":\"string\",\"nullable\":false,\"metadata\":{}},{\"name\":\"qty\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]},\"containsNull\":false},\"nullable\":true,\"metadata\":{}}", "position": 3, "nullable": true}
 ]}`

func writeTables(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tables.json")
	if err := os.WriteFile(path, []byte(ordersTable), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeTables: a program with only a table name and OAuth credentials
// reads the table's schema from `zbstream serve -tables`' admin address
// (the workspace URL it prints), ingests JSON objects on a proto stream
// built from it, and the server stores proto records that decode to the
// values sent. A record that does not fit the columns is refused naming
// the field, and a proto stream whose descriptor does not fit is refused
// at open.
func TestServeTables(t *testing.T) {
	s := cmds.StartServe(t, "-engine", "memory", "-tables", writeTables(t),
		"-oauth", "etl:pw:main.sales.orders", "-token", "etl:rtok:main.sales.orders")
	workspace := s.Workspace
	if workspace != s.Admin {
		t.Fatalf("workspace %q, want the admin URL %q; stdout:\n%s", workspace, s.Admin, s.Stdout)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client, err := zbstream.NewClient(s.Endpoint, zbstream.WithOAuth(workspace, "etl", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	desc, err := client.TableDescriptor(ctx, "main.sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	st, err := client.CreatePersistentStream(ctx, "main.sales.orders", zbstream.WithJSONToProto(desc))
	if err != nil {
		t.Fatal(err)
	}
	sent := []string{
		`{"id": 1, "customer": "Ada", "placed_at": 1700000000123456, "lines": [{"sku": "a-1", "qty": 2}]}`,
		`{"id": "9007199254740993", "lines": []}`,
		`{"id": 3, "customer": null}`,
	}
	for _, r := range sent {
		if _, err := st.IngestJSON(ctx, json.RawMessage(r)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.IngestJSON(ctx, json.RawMessage(`{"id": 4, "lines": [{"qty": 1}]}`)); !errors.Is(err, zbstream.ErrRecordType) || !strings.Contains(err.Error(), "lines") {
		t.Fatalf("a line without its NOT NULL sku: %v", err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}

	page := adminRecords(t, s.Admin, st.StreamID(), "rtok")
	raw, err := proto.Marshal(desc)
	if err != nil {
		t.Fatal(err)
	}
	md, err := record.MessageDescriptor(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != len(sent) {
		t.Fatalf("stored %d records, want %d", len(page.Records), len(sent))
	}
	for i, r := range page.Records {
		got, want := dynamicpb.NewMessage(md), dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(r.Data, got); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if err := protojson.Unmarshal([]byte(sent[i]), want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Errorf("record %d = %v, want %v", i, got, want)
		}
	}

	// A proto stream of another shape does not open: customer as int64.
	bad := proto.Clone(desc).(*descriptorpb.DescriptorProto)
	for _, f := range bad.Field {
		if f.GetName() == "customer" {
			f.Type = descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()
		}
	}
	_, err = client.CreatePersistentStream(ctx, "main.sales.orders", zbstream.WithJSONToProto(bad))
	if err == nil || !strings.Contains(err.Error(), "does not fit table main.sales.orders") || !strings.Contains(err.Error(), "customer") {
		t.Fatalf("a descriptor that does not fit: %v", err)
	}
}

// adminRecords reads a stream's records from the admin API.
func adminRecords(t *testing.T, adminURL, id, token string) admin.RecordsPage {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, adminURL+"/v1/streams/"+id+"/records?limit=100", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page admin.RecordsPage
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("records of %s: HTTP %d", id, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	return page
}

// TestServeTablesErrors: a -tables path that cannot be loaded is bad
// input, named.
func TestServeTablesErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"full_name": "a.b.c", "columns": [{"name": "x", "type_name": "INTERVAL"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, msg string }{
		{filepath.Join(t.TempDir(), "missing.json"), "no such file"},
		{bad, `column "x"`},
	} {
		code, _, errs := cmds.RunCmd(t, "serve", "-engine", "memory", "-addr", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-tables", tc.path)
		if code != cli.ExitInput || !strings.Contains(errs, "-tables") || !strings.Contains(errs, tc.msg) {
			t.Fatalf("-tables %s: exit %d, want %d with %q:\n%s", tc.path, code, cli.ExitInput, tc.msg, errs)
		}
	}
}
