package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
)

func TestCodeOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{ErrHelp, ExitOK},
		{errors.New("x"), ExitFailure},
		{UsageErr("bad %s", "flag"), ExitUsage},
		{fmt.Errorf("wrapped: %w", WithCode(ExitInput, errors.New("x"))), ExitInput},
		{fmt.Errorf("stopped: %w", context.Canceled), ExitInterrupted},
	} {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	if WithCode(ExitFailure, nil) != nil {
		t.Error("WithCode(nil) is not nil")
	}
	var out bytes.Buffer
	if code := Exit(core.Errorf("%w", WithCode(ExitAuth, errors.New("refused"))), &out); code != ExitAuth || out.String() != "zbstream: refused\n" {
		t.Errorf("Exit = %d, %q", code, out.String())
	}
	out.Reset()
	if code := Exit(ErrHelp, &out); code != ExitOK || out.Len() != 0 {
		t.Errorf("Exit(help) = %d, %q", code, out.String())
	}
}

func TestParse(t *testing.T) {
	var out bytes.Buffer
	newSet := func() (*flag.FlagSet, *bool, *string) {
		fs := NewFlags("x", "x [flags] ARGS", &out)
		return fs, fs.Bool("json", false, "json"), fs.String("token", "", "token")
	}
	for _, c := range []struct {
		args      []string
		pos       []string
		json      bool
		token     string
		wantUsage bool
	}{
		{args: []string{"a", "b"}, pos: []string{"a", "b"}},
		{args: []string{"-json", "a"}, pos: []string{"a"}, json: true},
		{args: []string{"a", "-json", "b", "-token", "t"}, pos: []string{"a", "b"}, json: true, token: "t"},
		{args: []string{"a", "--", "-json"}, pos: []string{"a", "-json"}},
		{args: []string{"a", "-nope"}, wantUsage: true},
	} {
		fs, js, tok := newSet()
		pos, err := ParseAnywhere(fs, c.args)
		if c.wantUsage {
			if CodeOf(err) != ExitUsage {
				t.Errorf("%q: %v, want a usage error", c.args, err)
			}
			continue
		}
		if err != nil || !slices.Equal(pos, c.pos) || *js != c.json || *tok != c.token {
			t.Errorf("%q: %q json=%v token=%q %v", c.args, pos, *js, *tok, err)
		}
	}
	fs, _, _ := newSet()
	if err := Parse(fs, []string{"stray"}, false); CodeOf(err) != ExitUsage || !strings.Contains(err.Error(), `"stray"`) {
		t.Errorf("a stray argument: %v", err)
	}
	fs, _, _ = newSet()
	if err := Parse(fs, []string{"-h"}, false); !errors.Is(err, ErrHelp) || !strings.Contains(out.String(), "Usage: zbstream x [flags] ARGS") {
		t.Errorf("-h: %v, %q", err, out.String())
	}
}

func TestClientErr(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
		hint string
	}{
		{&zbstream.ConnectionError{Code: core.CodeUnauthenticated, Err: errors.New("no")}, ExitAuth, ""},
		{&zbstream.ConnectionError{Code: core.CodePermissionDenied, Err: errors.New("no")}, ExitAuth, ""},
		{&zbstream.ConnectionError{Code: core.CodeUnavailable, Err: errors.New("down")}, ExitUnreachable, "server unreachable"},
		{&zbstream.ConfigError{Field: "X", Reason: "bad"}, ExitUsage, ""},
		{&zbstream.TLSError{Mistake: zbstream.UntrustedCertificate, Err: errors.New("x509")}, ExitUsage, "-my-ca"},
		{errors.New("other"), ExitFailure, ""},
	} {
		err := ClientErr(c.err, "-my-ca")
		if CodeOf(err) != c.want || !strings.Contains(err.Error(), c.hint) {
			t.Errorf("ClientErr(%v) = %v (exit %d), want exit %d and %q", c.err, err, CodeOf(err), c.want, c.hint)
		}
	}
	if ClientErr(nil, "-ca") != nil {
		t.Error("ClientErr(nil) is not nil")
	}
}

func TestRole(t *testing.T) {
	type cfg struct{ N int }
	cmd, err := RoleCommand(context.Background(), "demo", "server", cfg{N: 7})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Args[1] != "demo" {
		t.Fatalf("args %q", cmd.Args)
	}
	for _, kv := range cmd.Env {
		if k, v, _ := strings.Cut(kv, "="); k == RoleEnv || k == RoleConfigEnv {
			t.Setenv(k, v)
		}
	}
	var got cfg
	if role, err := Role("demo", &got); role != "server" || err != nil || got.N != 7 {
		t.Fatalf("Role(demo) = %q, %v, %+v", role, err, got)
	}
	if role, err := Role("bench", &got); role != "" || err != nil {
		t.Fatalf("Role(bench) = %q, %v: another command's role", role, err)
	}
	t.Setenv(RoleConfigEnv, "{not json")
	if _, err := Role("demo", &got); err == nil {
		t.Fatal("a bad configuration was accepted")
	}
}
