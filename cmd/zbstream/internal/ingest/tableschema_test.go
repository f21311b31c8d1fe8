package ingest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// TestIngestTableSchemaFlags: -table-schema with another record format or
// with routing, without a workspace or a token, and -workspace-url without
// the bare flag are bad flags (exit 2), refused before a state file is
// written.
func TestIngestTableSchemaFlags(t *testing.T) {
	dir := t.TempDir()
	file := writeLines(t, dir, "e.jsonl", 3)
	schema := writeFile(t, dir, "orders.json", ucOrders)
	base := []string{"-endpoint", "http://127.0.0.1:1", "-token", "x"}
	ws := []string{"-workspace-url", "https://ws.example.com"}
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"with avro", append(append(base, "-table", ucTable, "-table-schema", "-avro-schema", "s.avsc"), ws...), "-table-schema and -avro-schema exclude each other"},
		{"with proto", append(append(base, "-table", ucTable, "-table-schema", "-proto-descriptor-set", "d.pb", "-proto-message", "a.B"), ws...), "-table-schema and -proto-descriptor-set/-proto-message exclude each other"},
		{"with proto message alone", append(base, "-table", ucTable, "-table-schema="+schema, "-proto-message", "a.B"), "exclude each other"},
		{"routed", append(append(base, "-table-field", "t", "-table-schema"), ws...), "-table-schema takes one table"},
		{"no workspace", append(base, "-table", ucTable, "-table-schema"), "give -workspace-url, or -table-schema=FILE"},
		{"no token", []string{"-endpoint", "http://127.0.0.1:1", "-table", ucTable, "-table-schema", "-workspace-url", "https://ws.example.com"}, "pass -token, or set $ZBSTREAM_TOKEN"},
		{"workspace alone", append(base, "-table", ucTable, "-workspace-url", "https://ws.example.com"), "-workspace-url is where -table-schema"},
		{"workspace with a file", append(base, "-table", ucTable, "-table-schema="+schema, "-workspace-url", "https://ws.example.com"), "-workspace-url is where -table-schema"},
		{"empty file", append(base, "-table", ucTable, "-table-schema="), "-table-schema=FILE needs a file"},
		{"file after a space", append(append(base, "-table", ucTable, "-table-schema", schema), ws...), `write -table-schema=FILE, with "="`},
		{"bad workspace", append(base, "-table", ucTable, "-table-schema", "-workspace-url", "ftp://ws.example.com"), "WorkspaceURL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(cli.EnvToken, "")
			code, _, errOut := runIngestCmd(context.Background(), t, append(tc.args, file)...)
			if code != cli.ExitUsage || !strings.Contains(errOut, tc.msg) {
				t.Fatalf("exit %d, want %d saying %q:\n%s", code, cli.ExitUsage, tc.msg, errOut)
			}
		})
	}
	if _, err := os.Stat(file + ".zbstate"); err == nil {
		t.Fatal("a state file was written despite bad flags")
	}
	// The token may come from the environment.
	t.Setenv(cli.EnvToken, "from-env")
	if _, err := parseFlags([]string{"-endpoint", "http://127.0.0.1:1", "-table", ucTable, "-table-schema", "-workspace-url", "https://ws.example.com", file}, os.Stderr); err != nil {
		t.Fatalf("token from $%s: %v", cli.EnvToken, err)
	}
}

// TestIngestTableSchemaUnavailable: a schema that cannot be had is a clear
// error with its own exit code, and nothing reaches the server: a table
// the workspace does not have, a token it refuses (5), a workspace that
// does not answer (4), a column no proto field can hold (1), a schema file
// missing or malformed (3), or one of another table (2).
func TestIngestTableSchemaUnavailable(t *testing.T) {
	ts, sargs := ucServer(t)
	ws := startUCWorkspace(t, ts.Token, ucOrders)
	dir := t.TempDir()
	file := writeFile(t, dir, "orders.jsonl", orderLines(5)...)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + lis.Addr().String()
	_ = lis.Close() // nothing listens there now

	interval := startUCWorkspace(t, ts.Token, strings.Replace(ucOrders, `"columns": [`,
		`"columns": [{"name": "span", "type_name": "INTERVAL", "type_text": "interval day", "position": 8, "nullable": true},`, 1))
	saved := writeFile(t, dir, "orders.json", ucOrders)
	other := writeFile(t, dir, "other.json", strings.ReplaceAll(ucOrders, "main.sales.orders", "main.sales.returns"))
	garbled := writeFile(t, dir, "garbled.json", `{"name": "orders", "columns": `)

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  []string
	}{
		{"no such table", []string{"-endpoint", "http://" + ts.Addr, "-token", ts.Token, "-table", "main.sales.missing", "-table-schema", "-workspace-url", ws.URL},
			cli.ExitAuth, []string{"main.sales.missing", "HTTP 404", "TABLE_DOES_NOT_EXIST", "check -table and -workspace-url"}},
		{"token refused", []string{"-endpoint", "http://" + ts.Addr, "-token", "wrong", "-table", ucTable, "-table-schema", "-workspace-url", ws.URL},
			cli.ExitAuth, []string{"HTTP 401", "refused the token from -token"}},
		{"workspace unreachable", append(sargs, "-table-schema", "-workspace-url", dead),
			cli.ExitUnreachable, []string{"workspace unreachable", ucTable}},
		{"unmapped column", append(sargs, "-table-schema", "-workspace-url", interval.URL),
			cli.ExitFailure, []string{`column "span"`, "INTERVAL"}},
		{"file missing", append(sargs, "-table-schema="+filepath.Join(dir, "none.json")),
			cli.ExitInput, []string{"-table-schema:", "none.json"}},
		{"file garbled", append(sargs, "-table-schema="+garbled),
			cli.ExitInput, []string{"garbled.json", "not a table object"}},
		{"file of another table", append(sargs, "-table-schema="+other),
			cli.ExitUsage, []string{"the schema of table main.sales.returns, not of -table main.sales.orders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runIngestCmd(context.Background(), t, append(tc.args, file)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, m := range tc.msg {
				if !strings.Contains(errOut, m) {
					t.Errorf("stderr does not say %q:\n%s", m, errOut)
				}
			}
			if n := streamCount(t, ts); n != 0 {
				t.Fatalf("%d streams made without a schema", n)
			}
		})
	}
	// The saved answer does not need the workspace: it goes through.
	if code, _, _ := runIngestCmd(context.Background(), t, append(sargs, "-table-schema="+saved, file)...); code != cli.ExitOK {
		t.Fatalf("from the saved answer: exit %d", code)
	}
}
