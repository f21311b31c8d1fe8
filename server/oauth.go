package server

// The OAuth token endpoint of a Databricks workspace, as far as Zerobus
// clients use it: client credentials for a token down-scoped to tables, so
// that programs written for the official SDKs run against this server with
// no workspace.

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/zbstream/zbstream/record"
)

// TokenPath is where a workspace serves its OAuth token endpoint, relative
// to the workspace (Unity Catalog) URL; the official SDKs post to it.
const TokenPath = "/oidc/v1/token"

// DefaultTokenLifetime is the lifetime of a minted token when
// TokenEndpointOptions.Lifetime is zero: one hour, as a workspace's.
const DefaultTokenLifetime = time.Hour

// maxTokenForm bounds the body of a token request.
const maxTokenForm = 64 << 10

// OAuthClient is a service principal's OAuth client credentials, as the
// token endpoint knows them.
type OAuthClient struct {
	// ID and Secret are the client credentials, sent with HTTP Basic
	// authentication. Both are required; the secret is never logged.
	ID, Secret string
	// Name names the principal of the tokens minted for this client (in
	// logs and StreamMeta.Principal). Empty: the ID.
	Name string
	// Tables bounds the tables a token may be scoped to. Empty, or holding
	// AllTables: any table.
	Tables []string
}

// mayWrite reports whether the client may get a token for table.
func (c OAuthClient) mayWrite(table string) bool {
	return len(c.Tables) == 0 || slices.Contains(c.Tables, AllTables) || slices.Contains(c.Tables, table)
}

// TokenEndpointOptions tunes a TokenEndpoint.
type TokenEndpointOptions struct {
	// Lifetime of a minted token (its expires_in). Zero:
	// DefaultTokenLifetime.
	Lifetime time.Duration
	// Logger receives a line per token minted or request refused (client
	// id, tables, reason), never a secret or a token. Nil logs nothing.
	Logger *slog.Logger
}

// TokenEndpoint is an http.Handler serving POST TokenPath as a Databricks
// workspace does for the Zerobus SDKs: the OAuth 2.0 client credentials
// grant (RFC 6749 section 4.4) with the client authenticated by HTTP Basic,
// scope "all-apis", and an authorization_details form field (RFC 9396)
// listing unity_catalog_privileges. Each token it mints is added to the
// Auth it was made with, for the tables whose TABLE entry carries the
// MODIFY privilege, and for those tables only: the gRPC server then
// accepts it for exactly those tables, until it expires.
//
// Answers: 200 with {"access_token", "token_type": "Bearer",
// "expires_in", "scope"}; 401 invalid_client for missing or wrong
// credentials (the same answer for an unknown id and a wrong secret); 400
// unsupported_grant_type, invalid_scope (no "all-apis"), invalid_request
// (a malformed form or authorization_details) or
// invalid_authorization_details (a table the client may not have, or none
// with MODIFY); 405 for a method other than POST, 404 for another path.
// Without authorization_details the token covers every table the client
// may have (OAuthClient.Tables).
//
// Decisions: only HTTP Basic client authentication (what the official SDKs
// send), not credentials in the form; the resource field is accepted and
// ignored; a request naming one table the client may not have is refused
// whole rather than granted in part.
type TokenEndpoint struct {
	auth     *Auth
	clients  map[string]OAuthClient
	lifetime time.Duration
	log      *slog.Logger
}

// NewTokenEndpoint returns a token endpoint minting tokens into auth (which
// must not be nil: open mode needs no tokens) for the given clients. Client
// ids must be unique and without ':' (HTTP Basic cannot carry one), and
// every client needs a secret.
func NewTokenEndpoint(auth *Auth, clients []OAuthClient, opts TokenEndpointOptions) (*TokenEndpoint, error) {
	if auth == nil {
		return nil, errors.New("server: a token endpoint needs an Auth (open mode takes no tokens)")
	}
	if opts.Lifetime < 0 {
		return nil, errors.New("server: a negative token lifetime")
	}
	e := &TokenEndpoint{auth: auth, clients: map[string]OAuthClient{}, lifetime: opts.Lifetime, log: opts.Logger}
	if e.lifetime == 0 {
		e.lifetime = DefaultTokenLifetime
	}
	for _, c := range clients {
		switch {
		case c.ID == "" || strings.Contains(c.ID, ":"):
			return nil, fmt.Errorf("server: OAuth client id %q: want a non-empty id without ':'", c.ID)
		case c.Secret == "":
			return nil, fmt.Errorf("server: OAuth client %q has no secret", c.ID)
		}
		if _, dup := e.clients[c.ID]; dup {
			return nil, fmt.Errorf("server: OAuth client %q is given twice", c.ID)
		}
		if c.Name == "" {
			c.Name = c.ID
		}
		c.Tables = slices.Clone(c.Tables)
		e.clients[c.ID] = c
	}
	return e, nil
}

// tokenAnswer is a successful token response.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// ucPrivilege is one element of authorization_details.
type ucPrivilege struct {
	Type           string   `json:"type"`
	Privileges     []string `json:"privileges"`
	ObjectType     string   `json:"object_type"`
	ObjectFullPath string   `json:"object_full_path"`
}

// ServeHTTP answers a token request.
func (e *TokenEndpoint) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != TokenPath {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "the token endpoint takes POST")
		return
	}
	id, secret, ok := req.BasicAuth()
	c, known := e.clients[id]
	// Compare the secret even for an unknown id, so that the answer's
	// timing does not tell known ids apart.
	want := c.Secret
	if !known {
		want = "\x00unknown client"
	}
	if !ok || subtle.ConstantTimeCompare([]byte(secret), []byte(want)) != 1 || !known {
		w.Header().Set("WWW-Authenticate", `Basic realm="zbstream"`)
		e.refuse(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret", id)
		return
	}
	req.Body = http.MaxBytesReader(w, req.Body, maxTokenForm)
	if err := req.ParseForm(); err != nil {
		e.refuse(w, http.StatusBadRequest, "invalid_request", "the body is not a form", id)
		return
	}
	if gt := req.PostForm.Get("grant_type"); gt != "client_credentials" {
		e.refuse(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type %.40q: only client_credentials", gt), id)
		return
	}
	if !slices.Contains(strings.Fields(req.PostForm.Get("scope")), "all-apis") {
		e.refuse(w, http.StatusBadRequest, "invalid_scope", `the scope must include "all-apis"`, id)
		return
	}
	tables, status, code, desc := e.scope(c, req.PostForm["authorization_details"])
	if status != 0 {
		e.refuse(w, status, code, desc, id)
		return
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		e.refuse(w, http.StatusInternalServerError, "server_error", "no randomness", id)
		return
	}
	token := "zbs-oauth-" + hex.EncodeToString(b[:])
	if err := e.auth.AddToken(token, Principal{Name: c.Name, Tables: tables}, e.auth.now().Add(e.lifetime)); err != nil {
		e.refuse(w, http.StatusInternalServerError, "server_error", "the token could not be recorded", id)
		return
	}
	if e.log != nil {
		e.log.Info("OAuth token minted", "client_id", id, "tables", tables, "expires_in", e.lifetime)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(tokenAnswer{
		AccessToken: token, TokenType: "Bearer", ExpiresIn: int64(e.lifetime / time.Second), Scope: "all-apis",
	})
}

// scope returns the tables a token for c is scoped to, or the HTTP status,
// OAuth error code and description of a refusal.
func (e *TokenEndpoint) scope(c OAuthClient, details []string) (tables []string, status int, code, desc string) {
	const badDetails = "invalid_authorization_details"
	switch len(details) {
	case 0:
		if len(c.Tables) == 0 {
			return []string{AllTables}, 0, "", ""
		}
		return slices.Clone(c.Tables), 0, "", ""
	case 1:
	default:
		return nil, http.StatusBadRequest, "invalid_request", "authorization_details is given more than once"
	}
	var entries []ucPrivilege
	if err := json.Unmarshal([]byte(details[0]), &entries); err != nil {
		return nil, http.StatusBadRequest, "invalid_request", "authorization_details is not a JSON array of objects"
	}
	for _, en := range entries {
		if en.Type != "unity_catalog_privileges" {
			return nil, http.StatusBadRequest, badDetails, fmt.Sprintf("authorization_details type %.40q: only unity_catalog_privileges", en.Type)
		}
		if !strings.EqualFold(en.ObjectType, "TABLE") || !slices.ContainsFunc(en.Privileges, func(p string) bool { return strings.EqualFold(p, "MODIFY") }) {
			continue
		}
		t := en.ObjectFullPath
		if record.CheckTable(t) != nil {
			return nil, http.StatusBadRequest, badDetails, fmt.Sprintf("table %.80q is not catalog.schema.table", t)
		}
		if !c.mayWrite(t) {
			return nil, http.StatusBadRequest, badDetails, fmt.Sprintf("client %.80q may not have a token for table %.80q", c.ID, t)
		}
		if !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	if len(tables) == 0 {
		return nil, http.StatusBadRequest, badDetails, "authorization_details names no TABLE with the MODIFY privilege"
	}
	return tables, 0, "", ""
}

// refuse logs and writes an OAuth error answer.
func (e *TokenEndpoint) refuse(w http.ResponseWriter, status int, code, desc, clientID string) {
	if e.log != nil {
		e.log.Warn("OAuth token request refused", "client_id", fmt.Sprintf("%.80q", clientID), "status", status, "error", code, "reason", desc)
	}
	oauthError(w, status, code, desc)
}

// oauthError writes an RFC 6749 section 5.2 error answer.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
