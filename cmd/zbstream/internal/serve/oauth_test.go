package serve

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	zerobus "github.com/zbstream/zbstream/zerobus"
)

// TestServeOAuth: a program written for the official SDK runs end to end
// against `zbstream serve -oauth`: the workspace URL it prints mints the
// tokens, the server accepts them for the token's table only.
func TestServeOAuth(t *testing.T) {
	s := cmds.StartServe(t, "-engine", "memory", "-oauth", "etl:s3:cr:et:main.sales.orders", "-oauth", "any:pw")
	workspace := s.Workspace
	if workspace != s.Admin {
		t.Fatalf("workspace %q, want the admin URL %q; stdout:\n%s", workspace, s.Admin, s.Stdout)
	}
	sdk, err := zerobus.NewZerobusSdk(s.Endpoint, workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	opts := zerobus.DefaultStreamConfigurationOptions()
	opts.RecordType = zerobus.RecordTypeJson
	opts.Recovery, opts.RecoveryRetries = false, 1
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: "main.sales.orders"}, "etl", "s3:cr:et", opts)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	off, err := st.IngestRecordOffset(`{"id": 1}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WaitForOffset(off); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, secret, table, want string }{
		{"etl", "s3:cr:et", "main.sales.other", "invalid_authorization_details"},
		{"etl", "wrong", "main.sales.orders", "invalid_client"},
	} {
		_, err := sdk.CreateStream(zerobus.TableProperties{TableName: c.table}, c.id, c.secret, opts)
		if err == nil || err.(*zerobus.ZerobusError).Retryable() || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v, want a non-retryable %s", c.id, c.table, err, c.want)
		}
	}
	// The unrestricted client may write any table.
	st, err = sdk.CreateStream(zerobus.TableProperties{TableName: "main.sales.other"}, "any", "pw", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.Stderr.String(), "s3:cr:et") || strings.Contains(s.Stderr.String(), "zbs-oauth-") {
		t.Fatalf("a secret or token in the log:\n%s", s.Stderr)
	}
	// Without -token, the admin API is closed.
	resp, err := http.Get(s.Admin + "/v1/streams")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("admin API without -token: %d, want 401", resp.StatusCode)
	}
}

// TestServeOAuthFlagErrors: bad -oauth values and combinations.
func TestServeOAuthFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no secret", []string{"-oauth", "etl"}, "want CLIENT_ID:SECRET"},
		{"empty secret", []string{"-oauth", "etl:"}, "empty secret"},
		{"empty id", []string{"-oauth", ":pw"}, "empty OAuth client id"},
		{"bad table", []string{"-oauth", "etl:pw:nota.table"}, "not catalog.schema.table"},
		{"empty table list", []string{"-oauth", "etl:pw:"}, "empty table list"},
		{"duplicate", []string{"-oauth", "etl:a", "-oauth", "etl:b"}, "given twice"},
		{"with -open", []string{"-open", "-oauth", "etl:pw"}, "exclude"},
		{"admin off", []string{"-admin", "off", "-oauth", "etl:pw"}, "needs -admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "-engine", "memory"}, tc.args...)
			code, _, errs := cmds.RunCmd(t, args...)
			if code != cli.ExitUsage || !strings.Contains(errs, tc.msg) {
				t.Fatalf("exit %d, want %d; stderr should contain %q:\n%s", code, cli.ExitUsage, tc.msg, errs)
			}
			if strings.Contains(errs, ":pw") || strings.Contains(errs, "etl:a") {
				t.Fatalf("the secret in the message:\n%s", errs)
			}
		})
	}
}
