package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// authAs authenticates a call carrying token.
func authAs(a *Auth, token string) (Principal, error) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(HeaderAuthorization, "Bearer "+token))
	return a.authenticate(ctx)
}

// TestAddToken: a token added at run time is accepted until it expires,
// then refused as expired and dropped when another is added; a live token
// cannot be added twice, and bad arguments change nothing.
func TestAddToken(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	a := NewAuth(map[string]Principal{"static": {Name: "s", Tables: []string{"a.b.c"}}})
	a.now = func() time.Time { return now }

	if err := a.AddToken("tok", Principal{Name: "p", Tables: []string{"a.b.c"}}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if p, err := authAs(a, "tok"); err != nil || p.Name != "p" || !p.CanWrite("a.b.c") || p.CanWrite("a.b.d") {
		t.Fatalf("fresh token: %v %v", p, err)
	}
	if err := a.AddToken("tok", Principal{Name: "q"}, time.Time{}); !errors.Is(err, ErrTokenExists) {
		t.Fatalf("adding a live token again: %v", err)
	}
	for name, c := range map[string]struct {
		tok     string
		p       Principal
		expires time.Time
	}{
		"empty token":  {"", Principal{Name: "x"}, time.Time{}},
		"white space":  {"a b", Principal{Name: "x"}, time.Time{}},
		"no name":      {"x", Principal{}, time.Time{}},
		"already past": {"x", Principal{Name: "x"}, now},
	} {
		if err := a.AddToken(c.tok, c.p, c.expires); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := authAs(a, "x"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("a refused token is accepted: %v", err)
	}

	now = now.Add(time.Minute)
	_, err := authAs(a, "tok")
	if status.Code(err) != codes.Unauthenticated || status.Convert(err).Message() != "expired bearer token" {
		t.Fatalf("expired token: %v", err)
	}
	if err := a.AddToken("tok2", Principal{Name: "p"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.tokens["tok"]; ok {
		t.Fatal("the expired token was not dropped")
	}
	if _, err := authAs(a, "static"); err != nil {
		t.Fatalf("static token: %v", err)
	}
	if err := a.AddToken("tok", Principal{Name: "again"}, time.Time{}); err != nil {
		t.Fatalf("re-adding an expired token: %v", err)
	}
	var open *Auth
	if err := open.AddToken("t", Principal{Name: "x"}, time.Time{}); err == nil {
		t.Fatal("AddToken on open mode succeeded")
	}
}
