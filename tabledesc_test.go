package zbstream_test

// Client.TableDescriptor against a workspace served by httptest: the
// all-apis token and the bearer it gives the schema request, the cache and
// its refresh, and the failures retried (5xx, 429) and not (4xx, a
// redirect, an oversized answer, TLS).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream"
)

const ucTable = "main.sales.orders"

// workspace is a fake Databricks workspace: a token endpoint and the
// Unity Catalog tables API, whose answers tables decides.
type workspace struct {
	*httptest.Server
	mu      sync.Mutex
	tokens  int          // token requests
	gets    []string     // authorization header of each schema request
	forms   []url.Values // token request forms
	answer  func(n int, w http.ResponseWriter)
	landing int // requests to /elsewhere (a redirect's target)
}

func startWorkspace(t *testing.T, answer func(n int, w http.ResponseWriter)) *workspace {
	t.Helper()
	ws := &workspace{answer: answer}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oidc/v1/token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || !ok || id != "sp" || secret != "s3cret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		ws.mu.Lock()
		ws.tokens++
		n := ws.tokens
		ws.forms = append(ws.forms, r.PostForm)
		ws.mu.Unlock()
		fmt.Fprintf(w, `{"access_token":"uc-%d","token_type":"Bearer","expires_in":3600}`, n)
	})
	mux.HandleFunc("GET /api/2.1/unity-catalog/tables/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != ucTable {
			http.Error(w, `{"error_code":"TABLE_DOES_NOT_EXIST","message":"no such table"}`, http.StatusNotFound)
			return
		}
		ws.mu.Lock()
		ws.gets = append(ws.gets, r.Header.Get("Authorization"))
		n := len(ws.gets)
		ws.mu.Unlock()
		ws.answer(n, w)
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, _ *http.Request) {
		ws.mu.Lock()
		ws.landing++
		ws.mu.Unlock()
		ucAnswer(w)
	})
	ws.Server = httptest.NewServer(mux)
	t.Cleanup(ws.Close)
	return ws
}

func (ws *workspace) requests() (tokens, gets int) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.tokens, len(ws.gets)
}

// ucAnswer writes the table answer of record/testdata.
func ucAnswer(w http.ResponseWriter) {
	b, err := os.ReadFile("record/testdata/uc_table.json")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func oauthClient(t *testing.T, ws *workspace, opts ...zbstream.Option) *zbstream.Client {
	t.Helper()
	c, err := zbstream.NewClient("http://127.0.0.1:1", append([]zbstream.Option{zbstream.WithOAuth(ws.URL, "sp", "s3cret")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestTableDescriptor(t *testing.T) {
	ws := startWorkspace(t, func(_ int, w http.ResponseWriter) { ucAnswer(w) })
	c := oauthClient(t, ws)
	d, err := c.TableDescriptor(t.Context(), ucTable)
	if err != nil {
		t.Fatal(err)
	}
	if d.GetName() != "orders" || len(d.GetField()) != 20 || d.GetField()[0].GetLabel() != descriptorpb.FieldDescriptorProto_LABEL_REQUIRED {
		t.Fatalf("descriptor %v", d)
	}
	// The token: client credentials, scope all-apis, not down-scoped.
	if want := (url.Values{"grant_type": {"client_credentials"}, "scope": {"all-apis"}}); !reflect.DeepEqual(ws.forms[0], want) {
		t.Errorf("token form %v, want %v", ws.forms[0], want)
	}
	if ws.gets[0] != "Bearer uc-1" {
		t.Errorf("schema request authorization %q", ws.gets[0])
	}
	// Cached: no request, and the copy is the caller's own.
	d.Field = nil
	again, err := c.TableDescriptor(t.Context(), ucTable)
	if err != nil || len(again.GetField()) != 20 {
		t.Fatalf("cached: %v, %d fields", err, len(again.GetField()))
	}
	if tokens, gets := ws.requests(); tokens != 1 || gets != 1 {
		t.Errorf("%d token and %d schema requests, want 1 and 1", tokens, gets)
	}
	// Refreshed: a new request (with the cached token).
	if _, err := c.RefreshTableDescriptor(t.Context(), ucTable); err != nil {
		t.Fatal(err)
	}
	if tokens, gets := ws.requests(); tokens != 1 || gets != 2 {
		t.Errorf("after refresh: %d token and %d schema requests, want 1 and 2", tokens, gets)
	}
}

// TestTableDescriptorRefreshSeesChange: after the table's schema changed,
// TableDescriptor keeps the old descriptor and RefreshTableDescriptor
// gets the new one.
func TestTableDescriptorRefreshSeesChange(t *testing.T) {
	ws := startWorkspace(t, func(n int, w http.ResponseWriter) {
		cols := `{"name":"a","type_name":"INT","position":0}`
		if n > 1 {
			cols += `,{"name":"b","type_name":"STRING","position":1}`
		}
		fmt.Fprintf(w, `{"name":"orders","columns":[%s]}`, cols)
	})
	c := oauthClient(t, ws)
	for i, want := range []int{1, 1, 2, 2} {
		get := c.TableDescriptor
		if i == 2 {
			get = c.RefreshTableDescriptor
		}
		d, err := get(t.Context(), ucTable)
		if err != nil || len(d.GetField()) != want {
			t.Fatalf("call %d: %v, %d fields, want %d", i, err, len(d.GetField()), want)
		}
	}
}

// TestTableDescriptorStaticToken: WithWorkspaceURL and WithToken: the
// schema request carries the static token.
func TestTableDescriptorStaticToken(t *testing.T) {
	ws := startWorkspace(t, func(_ int, w http.ResponseWriter) { ucAnswer(w) })
	c, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithToken("pat-1"), zbstream.WithWorkspaceURL(ws.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.TableDescriptor(t.Context(), ucTable); err != nil {
		t.Fatal(err)
	}
	if tokens, _ := ws.requests(); tokens != 0 || ws.gets[0] != "Bearer pat-1" {
		t.Errorf("%d tokens minted, authorization %q", tokens, ws.gets[0])
	}
	// Without a workspace there is nothing to read.
	bare, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithToken("pat-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	var ce *zbstream.ConfigError
	if _, err := bare.TableDescriptor(t.Context(), ucTable); !errors.As(err, &ce) {
		t.Errorf("without a workspace: %v", err)
	}
	if _, err := zbstream.NewClient("x:1", zbstream.WithWorkspaceURL("ftp://h")); !errors.As(err, &ce) {
		t.Errorf("ftp workspace: %v", err)
	}
}

// TestTableDescriptorFailures: what is retried and what is not.
func TestTableDescriptorFailures(t *testing.T) {
	big := strings.Repeat(" ", 8<<20+1)
	for _, tc := range []struct {
		name      string
		answer    func(n int, w http.ResponseWriter)
		table     string
		status    int
		retryable bool
		gets      int // schema requests made
		ok        bool
	}{
		{"404", nil, "main.sales.gone", 404, false, 0, false},
		{"403", func(int, http.ResponseWriter) {}, "", 403, false, 1, false},
		{"500 then 200", func(int, http.ResponseWriter) {}, "", 0, false, 2, true},
		{"429 every time", func(int, http.ResponseWriter) {}, "", 429, true, 3, false},
		{"503 every time", func(int, http.ResponseWriter) {}, "", 503, true, 3, false},
		{"redirect", func(int, http.ResponseWriter) {}, "", 302, false, 1, false},
		{"oversized", func(_ int, w http.ResponseWriter) { _, _ = w.Write([]byte(big)) }, "", 200, false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ws *workspace
			answer := tc.answer
			switch tc.name {
			case "403":
				answer = func(_ int, w http.ResponseWriter) {
					http.Error(w, `{"error_code":"PERMISSION_DENIED","message":"no"}`, http.StatusForbidden)
				}
			case "500 then 200":
				answer = func(n int, w http.ResponseWriter) {
					if n == 1 {
						http.Error(w, "", http.StatusInternalServerError)
						return
					}
					ucAnswer(w)
				}
			case "429 every time":
				answer = func(_ int, w http.ResponseWriter) { http.Error(w, "", http.StatusTooManyRequests) }
			case "503 every time":
				answer = func(_ int, w http.ResponseWriter) { http.Error(w, "", http.StatusServiceUnavailable) }
			case "redirect":
				answer = func(_ int, w http.ResponseWriter) {
					w.Header().Set("Location", ws.URL+"/elsewhere")
					w.WriteHeader(http.StatusFound)
				}
			}
			if answer == nil {
				answer = func(_ int, w http.ResponseWriter) { ucAnswer(w) }
			}
			ws = startWorkspace(t, answer)
			c := oauthClient(t, ws)
			table := tc.table
			if table == "" {
				table = ucTable
			}
			_, err := c.TableDescriptor(t.Context(), table)
			if _, gets := ws.requests(); gets != tc.gets || ws.landing != 0 {
				t.Errorf("%d schema requests (%d redirects followed), want %d", gets, ws.landing, tc.gets)
			}
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *zbstream.TableFetchError
			if !errors.As(err, &fe) || fe.StatusCode != tc.status || fe.Retryable != tc.retryable {
				t.Fatalf("got %v (%+v), want a *TableFetchError with status %d, retryable %v", err, fe, tc.status, tc.retryable)
			}
			if !strings.HasPrefix(err.Error(), "zbstream: ") || strings.Count(err.Error(), "zbstream: ") != 1 {
				t.Errorf("message %q", err)
			}
			if tc.name == "403" && !strings.Contains(err.Error(), "PERMISSION_DENIED: no") {
				t.Errorf("message %q does not repeat the answer", err)
			}
		})
	}
}

// TestTableDescriptorTokenRefused: a token endpoint that refuses the
// credentials is not retried, and no schema request is made.
func TestTableDescriptorTokenRefused(t *testing.T) {
	ws := startWorkspace(t, func(_ int, w http.ResponseWriter) { ucAnswer(w) })
	c, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithOAuth(ws.URL, "sp", "wrong"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.TableDescriptor(t.Context(), ucTable)
	var fe *zbstream.TableFetchError
	var ce *zbstream.ConnectionError
	if !errors.As(err, &fe) || fe.Retryable || !errors.As(err, &ce) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("got %v", err)
	}
	if _, gets := ws.requests(); gets != 0 {
		t.Errorf("%d schema requests", gets)
	}
}

// TestTableDescriptorTLS: a certificate the client does not trust fails at
// once, not retried.
func TestTableDescriptorTLS(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake errors
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	c, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithToken("t"), zbstream.WithWorkspaceURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.TableDescriptor(t.Context(), ucTable)
	var fe *zbstream.TableFetchError
	if !errors.As(err, &fe) || fe.Retryable {
		t.Fatalf("got %v", err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (no retry)", n)
	}
}

// TestTableDescriptorContext: a canceled ctx ends the call with its cause.
func TestTableDescriptorContext(t *testing.T) {
	ws := startWorkspace(t, func(_ int, w http.ResponseWriter) { http.Error(w, "", http.StatusServiceUnavailable) })
	c := oauthClient(t, ws)
	ctx, cancel := context.WithTimeoutCause(t.Context(), 50*time.Millisecond, errors.New("gave up"))
	defer cancel()
	if _, err := c.TableDescriptor(ctx, ucTable); err == nil || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("got %v", err)
	}
}
