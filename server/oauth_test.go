package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

const oauthTable = "main.sales.orders"

// officialDetails is the authorization_details the official SDKs send for
// a table.
func officialDetails(table string) string {
	p := strings.Split(table, ".")
	b, _ := json.Marshal([]map[string]any{
		{"type": "unity_catalog_privileges", "privileges": []string{"USE CATALOG"}, "object_type": "CATALOG", "object_full_path": p[0]},
		{"type": "unity_catalog_privileges", "privileges": []string{"USE SCHEMA"}, "object_type": "SCHEMA", "object_full_path": p[0] + "." + p[1]},
		{"type": "unity_catalog_privileges", "privileges": []string{"SELECT", "MODIFY"}, "object_type": "TABLE", "object_full_path": table},
	})
	return string(b)
}

// oauthSetup starts the gRPC server and a token endpoint sharing one Auth,
// with client "etl" (secret "s3cret") limited to oauthTable and client
// "any" (secret "pw") unrestricted.
func oauthSetup(t *testing.T) (ts *servertest.Server, workspace string) {
	t.Helper()
	auth := server.NewAuth(nil)
	ep, err := server.NewTokenEndpoint(auth, []server.OAuthClient{
		{ID: "etl", Secret: "s3cret", Tables: []string{oauthTable}},
		{ID: "any", Secret: "pw"},
	}, server.TokenEndpointOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(ep)
	t.Cleanup(hs.Close)
	ts = servertest.Start(t, servertest.WithOptions(func(o *server.Options) { o.Auth = auth }))
	return ts, hs.URL
}

// postToken sends a token request as the official SDKs do; extra replaces
// or adds form fields (an empty value removes the field).
func postToken(t *testing.T, workspace, id, secret, table string, extra map[string]string) (int, map[string]any) {
	t.Helper()
	form := url.Values{
		"grant_type":            {"client_credentials"},
		"scope":                 {"all-apis"},
		"resource":              {"api://databricks/workspaces/1234/zerobusDirectWriteApi"},
		"authorization_details": {officialDetails(table)},
	}
	for k, v := range extra {
		if v == "" {
			form.Del(k)
		} else {
			form.Set(k, v)
		}
	}
	req, err := http.NewRequest(http.MethodPost, workspace+server.TokenPath, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(id, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	return resp.StatusCode, body
}

// ingestOneJSON creates an ephemeral stream with opts and ingests one
// record durably.
func ingestOneJSON(ctx context.Context, endpoint, table string, opt zbstream.Option) error {
	c, err := zbstream.NewClient(endpoint, opt)
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.CreateStream(ctx, table, zbstream.WithoutRecovery())
	if err != nil {
		return err
	}
	if _, err := s.IngestRecord(ctx, []byte(`{"id":1}`)); err != nil {
		_ = s.Close(ctx)
		return err
	}
	return s.Close(ctx)
}

// TestTokenEndpointClient: the root client's OAuth (the official SDKs'
// request) gets a token that the gRPC server accepts for the table, and
// the token endpoint refuses a table outside the client's grant.
func TestTokenEndpointClient(t *testing.T) {
	ts, workspace := oauthSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ingestOneJSON(ctx, "http://"+ts.Addr, oauthTable, zbstream.WithOAuth(workspace, "etl", "s3cret")); err != nil {
		t.Fatalf("ingest with OAuth: %v", err)
	}
	err := ingestOneJSON(ctx, "http://"+ts.Addr, "main.sales.other", zbstream.WithOAuth(workspace, "etl", "s3cret"))
	var ce *zbstream.ConnectionError
	if !errors.As(err, &ce) || ce.Retryable() || !strings.Contains(err.Error(), "invalid_authorization_details") {
		t.Fatalf("table outside the grant: got %v, want a non-retryable refusal of the token request", err)
	}
	err = ingestOneJSON(ctx, "http://"+ts.Addr, oauthTable, zbstream.WithOAuth(workspace, "etl", "wrong"))
	if !errors.As(err, &ce) || ce.Retryable() || !strings.Contains(err.Error(), "invalid_client") {
		t.Fatalf("wrong secret: got %v, want a non-retryable invalid_client", err)
	}
}

// TestTokenEndpointScope: a token is accepted for exactly the tables it was
// minted for.
func TestTokenEndpointScope(t *testing.T) {
	ts, workspace := oauthSetup(t)
	code, body := postToken(t, workspace, "any", "pw", oauthTable, nil)
	if code != http.StatusOK || body["token_type"] != "Bearer" || body["expires_in"] != float64(3600) {
		t.Fatalf("token answer %d %v", code, body)
	}
	token, _ := body["access_token"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ingestOneJSON(ctx, "http://"+ts.Addr, oauthTable, zbstream.WithToken(token)); err != nil {
		t.Fatalf("the minted token on its table: %v", err)
	}
	err := ingestOneJSON(ctx, "http://"+ts.Addr, "main.sales.other", zbstream.WithToken(token))
	var ce *zbstream.ConnectionError
	if !errors.As(err, &ce) || ce.Code.String() != "PERMISSION_DENIED" {
		t.Fatalf("the minted token on another table: got %v, want PERMISSION_DENIED", err)
	}
	// Without authorization_details: every table the client may have.
	code, body = postToken(t, workspace, "etl", "s3cret", oauthTable, map[string]string{"authorization_details": ""})
	if code != http.StatusOK {
		t.Fatalf("no authorization_details: %d %v", code, body)
	}
	if err := ingestOneJSON(ctx, "http://"+ts.Addr, oauthTable, zbstream.WithToken(body["access_token"].(string))); err != nil {
		t.Fatalf("unscoped token on the client's table: %v", err)
	}
}

// TestTokenEndpointRefusals: each malformed or unauthorized request gets
// its OAuth error, and no token.
func TestTokenEndpointRefusals(t *testing.T) {
	_, workspace := oauthSetup(t)
	for _, c := range []struct {
		name, id, secret, table string
		extra                   map[string]string
		status                  int
		code                    string
	}{
		{"wrong secret", "etl", "nope", oauthTable, nil, 401, "invalid_client"},
		{"unknown client", "who", "s3cret", oauthTable, nil, 401, "invalid_client"},
		{"no credentials", "", "", oauthTable, nil, 401, "invalid_client"},
		{"grant type", "etl", "s3cret", oauthTable, map[string]string{"grant_type": "password"}, 400, "unsupported_grant_type"},
		{"no scope", "etl", "s3cret", oauthTable, map[string]string{"scope": ""}, 400, "invalid_scope"},
		{"details not JSON", "etl", "s3cret", oauthTable, map[string]string{"authorization_details": "{"}, 400, "invalid_request"},
		{"details other type", "etl", "s3cret", oauthTable, map[string]string{"authorization_details": `[{"type":"x"}]`}, 400, "invalid_authorization_details"},
		{"no MODIFY", "etl", "s3cret", oauthTable, map[string]string{"authorization_details": `[{"type":"unity_catalog_privileges","privileges":["SELECT"],"object_type":"TABLE","object_full_path":"main.sales.orders"}]`}, 400, "invalid_authorization_details"},
		{"bad table name", "any", "pw", "a.b", nil, 400, "invalid_authorization_details"},
		{"table outside grant", "etl", "s3cret", "main.sales.other", nil, 400, "invalid_authorization_details"},
	} {
		t.Run(c.name, func(t *testing.T) {
			table := c.table
			extra := c.extra
			if table == "a.b" {
				extra = map[string]string{"authorization_details": `[{"type":"unity_catalog_privileges","privileges":["MODIFY"],"object_type":"TABLE","object_full_path":"a.b"}]`}
			}
			status, body := postToken(t, workspace, c.id, c.secret, table, extra)
			if status != c.status || body["error"] != c.code || body["access_token"] != nil {
				t.Fatalf("got %d %v, want %d %s", status, body, c.status, c.code)
			}
			if strings.Contains(body["error_description"].(string), "s3cret") {
				t.Fatal("the answer repeats the secret")
			}
		})
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{{http.MethodGet, server.TokenPath, 405}, {http.MethodPost, "/oidc/v1/other", 404}} {
		req, _ := http.NewRequest(c.method, workspace+c.path, nil)
		req.SetBasicAuth("etl", "s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
	}
}

// TestNewTokenEndpointErrors: a bad configuration is refused.
func TestNewTokenEndpointErrors(t *testing.T) {
	auth := server.NewAuth(nil)
	for name, c := range map[string]struct {
		auth    *server.Auth
		clients []server.OAuthClient
		opts    server.TokenEndpointOptions
	}{
		"nil auth":          {nil, nil, server.TokenEndpointOptions{}},
		"empty id":          {auth, []server.OAuthClient{{Secret: "x"}}, server.TokenEndpointOptions{}},
		"colon in id":       {auth, []server.OAuthClient{{ID: "a:b", Secret: "x"}}, server.TokenEndpointOptions{}},
		"no secret":         {auth, []server.OAuthClient{{ID: "a"}}, server.TokenEndpointOptions{}},
		"duplicate":         {auth, []server.OAuthClient{{ID: "a", Secret: "x"}, {ID: "a", Secret: "y"}}, server.TokenEndpointOptions{}},
		"negative lifetime": {auth, nil, server.TokenEndpointOptions{Lifetime: -time.Second}},
	} {
		if _, err := server.NewTokenEndpoint(c.auth, c.clients, c.opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
