package e2e_test

// A workspace behind the same private CA as the Zerobus endpoint: the
// client's WithCAPEM applies to its OAuth token requests and its schema
// reads as well as to the gRPC connection.

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/record"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestTLSWorkspace: the endpoint and the workspace (token endpoint and
// tables API) speak TLS with a certificate of a test CA; a client given
// that CA by WithCAPEM, and OAuth credentials, reads the table's schema,
// gets its tokens and ingests. A client without the CA fails at the
// schema read, with a certificate error.
func TestTLSWorkspace(t *testing.T) {
	certPEM, tlsConf := testCert(t)
	schema, err := record.ParseTableSchema([]byte(`{"full_name": "main.default.events", "columns": [
		{"name": "id", "type_name": "LONG", "position": 0, "nullable": false},
		{"name": "name", "type_name": "STRING", "position": 1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := server.NewTables(schema)
	if err != nil {
		t.Fatal(err)
	}
	auth := server.NewAuth(nil)
	tokens, err := server.NewTokenEndpoint(auth, []server.OAuthClient{{ID: "etl", Secret: "pw", Tables: []string{schema.FullName}}}, server.TokenEndpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ts := servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.TLS, o.Auth, o.Tables = tlsConf, auth, tables }))
	mux := http.NewServeMux()
	mux.Handle(server.TokenPath, tokens)
	mux.Handle(server.TablesPath, server.NewTablesHandler(tables, auth))
	ws := httptest.NewUnstartedServer(mux)
	ws.TLS = tlsConf
	ws.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes below
	ws.StartTLS()
	defer ws.Close()

	client, err := zbstream.NewClient("https://"+ts.Addr, zbstream.WithOAuth(ws.URL, "etl", "pw"), zbstream.WithCAPEM(certPEM))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	desc, err := client.TableDescriptor(ctx(t), schema.FullName)
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.CreatePersistentStream(ctx(t), schema.FullName, fast(zbstream.WithJSONToProto(desc))...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.IngestJSON(ctx(t), json.RawMessage(`{"id": 1, "name": "a"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if bs, err := ts.Records(ctx(t), s.StreamID()); err != nil || len(bs) != 1 {
		t.Fatalf("stored %v, %v", bs, err)
	}

	bare, err := zbstream.NewClient("https://"+ts.Addr, zbstream.WithOAuth(ws.URL, "etl", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	_, err = bare.TableDescriptor(ctx(t), schema.FullName)
	var fe *zbstream.TableFetchError
	if !errors.As(err, &fe) || fe.Retryable || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v, want a TableFetchError, not retryable, naming the certificate", err)
	}
}
