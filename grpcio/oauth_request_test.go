package grpcio_test

// The token request on the wire and the reading of expires_in.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/grpcio"
)

// TestOAuthWireRequest checks the request against a real HTTP server: method,
// path, Basic auth, headers, form fields and the authorization_details JSON.
func TestOAuthWireRequest(t *testing.T) {
	for _, tc := range []struct {
		name, workspaceID, wantResource string
	}{
		{"with resource", "1234567890", "api://databricks/workspaces/1234567890/zerobusDirectWriteApi"},
		{"without resource", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				method, path, contentType string
				user, pass                string
				basicOK                   bool
				form                      url.Values
			}
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				got.method, got.path, got.contentType = r.Method, r.URL.Path, r.Header.Get("Content-Type")
				got.user, got.pass, got.basicOK = r.BasicAuth()
				if err := r.ParseForm(); err != nil {
					t.Errorf("ParseForm: %v", err)
				}
				got.form = r.PostForm
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, tokenAnswer("wire-token", 3600))
			}))
			defer srv.Close()

			cfg := grpcio.OAuthConfig{
				WorkspaceURL: srv.URL + "/", // a trailing slash is dropped
				ClientID:     oauthTestID,
				ClientSecret: oauthTestSecret,
				Table:        "cat.sch.tbl",
				WorkspaceID:  tc.workspaceID,
				HTTPClient:   srv.Client(),
			}
			o := mustOAuth(t, cfg)
			wantToken(t, o, "wire-token")
			if n := calls.Load(); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			if got.method != http.MethodPost || got.path != "/oidc/v1/token" {
				t.Errorf("request %s %s, want POST /oidc/v1/token", got.method, got.path)
			}
			if got.contentType != "application/x-www-form-urlencoded" {
				t.Errorf("Content-Type %q", got.contentType)
			}
			if !got.basicOK || got.user != oauthTestID || got.pass != oauthTestSecret {
				t.Errorf("Basic auth (%q, %q, %v), want the client id and secret", got.user, got.pass, got.basicOK)
			}
			wantKeys := []string{"authorization_details", "grant_type", "scope"}
			if tc.wantResource != "" {
				wantKeys = append(wantKeys, "resource")
			}
			var keys []string
			for k, v := range got.form {
				keys = append(keys, k)
				if len(v) != 1 {
					t.Errorf("form field %s has %d values", k, len(v))
				}
			}
			if !sameStrings(keys, wantKeys) {
				t.Errorf("form fields %v, want %v", keys, wantKeys)
			}
			if g := got.form.Get("grant_type"); g != "client_credentials" {
				t.Errorf("grant_type %q", g)
			}
			if g := got.form.Get("scope"); g != "all-apis" {
				t.Errorf("scope %q", g)
			}
			if g := got.form.Get("resource"); g != tc.wantResource {
				t.Errorf("resource %q, want %q", g, tc.wantResource)
			}
			type detail struct {
				Type           string   `json:"type"`
				Privileges     []string `json:"privileges"`
				ObjectType     string   `json:"object_type"`
				ObjectFullPath string   `json:"object_full_path"`
			}
			var details []detail
			dec := json.NewDecoder(strings.NewReader(got.form.Get("authorization_details")))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&details); err != nil {
				t.Fatalf("authorization_details %q: %v", got.form.Get("authorization_details"), err)
			}
			want := []detail{
				{"unity_catalog_privileges", []string{"USE CATALOG"}, "CATALOG", "cat"},
				{"unity_catalog_privileges", []string{"USE SCHEMA"}, "SCHEMA", "cat.sch"},
				{"unity_catalog_privileges", []string{"SELECT", "MODIFY"}, "TABLE", "cat.sch.tbl"},
			}
			if !reflect.DeepEqual(details, want) {
				t.Errorf("authorization_details\n got %+v\nwant %+v", details, want)
			}
		})
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}

// TestOAuthNoExpiry: a token answer without expires_in serves its own
// callers but is not cached.
func TestOAuthNoExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ep := &fakeTokenEndpoint{respond: func(n int, _ *http.Request) (int, string, error) {
			return http.StatusOK, fmt.Sprintf(`{"access_token":"tok-%d","token_type":"bearer"}`, n), nil
		}}
		o := mustOAuth(t, oauthTestConfig(ep))
		wantToken(t, o, "tok-1")
		wantToken(t, o, "tok-2")
	})
}

// TestOAuthExpiresInQuoted: expires_in as a quoted number is accepted.
func TestOAuthExpiresInQuoted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ep := &fakeTokenEndpoint{respond: func(n int, _ *http.Request) (int, string, error) {
			return http.StatusOK, fmt.Sprintf(`{"access_token":"tok-%d","expires_in":"600"}`, n), nil
		}}
		o := mustOAuth(t, oauthTestConfig(ep))
		wantToken(t, o, "tok-1")
		time.Sleep(8 * time.Minute)
		wantToken(t, o, "tok-1")
		time.Sleep(time.Minute)
		wantToken(t, o, "tok-2")
	})
}

// TestOAuthUnscoped: an Unscoped provider asks for scope=all-apis alone,
// with the client's Basic credentials, and refuses a Table.
func TestOAuthUnscoped(t *testing.T) {
	var form url.Values
	var user, pass string
	ep := &fakeTokenEndpoint{respond: func(_ int, req *http.Request) (int, string, error) {
		user, pass, _ = req.BasicAuth()
		form = req.PostForm
		return http.StatusOK, `{"access_token":"uc-tok","token_type":"Bearer","expires_in":3600}`, nil
	}}
	cfg := oauthTestConfig(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if err := req.ParseForm(); err != nil {
			return nil, err
		}
		return ep.RoundTrip(req)
	}))
	cfg.Table, cfg.Unscoped = "", true
	wantToken(t, mustOAuth(t, cfg), "uc-tok")
	if user != oauthTestID || pass != oauthTestSecret {
		t.Errorf("basic auth %q", user)
	}
	if want := (url.Values{"grant_type": {"client_credentials"}, "scope": {"all-apis"}}); !reflect.DeepEqual(form, want) {
		t.Errorf("form %v, want %v", form, want)
	}
	cfg.Table = oauthTestTable
	if _, err := grpcio.NewOAuth(cfg); err == nil {
		t.Error("an Unscoped config with a Table was accepted")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
