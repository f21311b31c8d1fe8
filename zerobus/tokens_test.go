package zerobus_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// tokenProvider mints tokens from the local workspace's token endpoint, as
// the official SDKs ask for them.
type tokenProvider struct {
	t         *testing.T
	workspace string
}

// mint returns a token down-scoped to table.
func (p *tokenProvider) mint(table string) string {
	p.t.Helper()
	parts := strings.Split(table, ".")
	details, _ := json.Marshal([]map[string]any{
		{"type": "unity_catalog_privileges", "privileges": []string{"USE CATALOG"}, "object_type": "CATALOG", "object_full_path": parts[0]},
		{"type": "unity_catalog_privileges", "privileges": []string{"USE SCHEMA"}, "object_type": "SCHEMA", "object_full_path": parts[0] + "." + parts[1]},
		{"type": "unity_catalog_privileges", "privileges": []string{"SELECT", "MODIFY"}, "object_type": "TABLE", "object_full_path": table},
	})
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"all-apis"}, "authorization_details": {string(details)}}
	req, err := http.NewRequest(http.MethodPost, p.workspace+"/oidc/v1/token", strings.NewReader(form.Encode()))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(testClientID, testClientSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.AccessToken == "" {
		p.t.Fatalf("token request: %d %v", resp.StatusCode, err)
	}
	return body.AccessToken
}
