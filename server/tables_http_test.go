package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/server"
)

// TestTablesHandler: the definitions are served as loaded, to a token of
// a principal that may write the table, with Unity Catalog's error
// answers otherwise.
func TestTablesHandler(t *testing.T) {
	tables, err := server.LoadTables(filepath.Join("testdata", "tables"))
	if err != nil {
		t.Fatal(err)
	}
	auth := server.NewAuth(map[string]server.Principal{
		"tok-events": {Name: "events-writer", Tables: []string{"main.default.events"}},
		"tok-all":    {Name: "admin", Tables: []string{server.AllTables}},
	})
	hs := httptest.NewServer(server.NewTablesHandler(tables, auth))
	t.Cleanup(hs.Close)
	get := func(method, name, token string) (int, string, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, hs.URL+server.TablesPath+name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			ErrorCode string `json:"error_code"`
		}
		_ = json.Unmarshal(b, &e)
		return resp.StatusCode, e.ErrorCode, b
	}

	code, _, body := get(http.MethodGet, "main.default.events", "tok-events")
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, body)
	}
	file, err := os.ReadFile(filepath.Join("testdata", "tables", "events.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if json.Unmarshal(file, &want) != nil || json.Unmarshal(body, &got) != nil {
		t.Fatalf("answer %q", body)
	}
	if wb, _ := json.Marshal(want); string(wb) != mustJSON(t, got) {
		t.Fatalf("served %s, want the file's object %s", body, wb)
	}
	if strings.Contains(string(body), "\n") {
		t.Fatalf("served %q: want compact JSON", body)
	}

	for _, tc := range []struct {
		name, method, table, token string
		code                       int
		errorCode                  string
	}{
		{"no token", http.MethodGet, "main.default.events", "", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"unknown token", http.MethodGet, "main.default.events", "nope", http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"another table", http.MethodGet, "main.default.clicks", "tok-events", http.StatusForbidden, "PERMISSION_DENIED"},
		{"another, undefined table", http.MethodGet, "main.default.nothing", "tok-events", http.StatusForbidden, "PERMISSION_DENIED"},
		{"undefined table", http.MethodGet, "main.default.nothing", "tok-all", http.StatusNotFound, "TABLE_DOES_NOT_EXIST"},
		{"not a table name", http.MethodGet, "main.default", "tok-all", http.StatusBadRequest, "INVALID_PARAMETER_VALUE"},
		{"POST", http.MethodPost, "main.default.events", "tok-all", http.StatusMethodNotAllowed, "BAD_REQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ec, body := get(tc.method, tc.table, tc.token)
			if code != tc.code || ec != tc.errorCode {
				t.Fatalf("%s %s: %d %s, want %d %s", tc.method, tc.table, code, body, tc.code, tc.errorCode)
			}
		})
	}
	if code, _, body := get(http.MethodHead, "ops.logs.lines", "tok-all"); code != http.StatusOK || len(body) != 0 {
		t.Fatalf("HEAD: %d %q", code, body)
	}

	open := httptest.NewServer(server.NewTablesHandler(tables, nil))
	t.Cleanup(open.Close)
	resp, err := open.Client().Get(open.URL + server.TablesPath + "ops.logs.metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("open mode: %d", resp.StatusCode)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
