package server

import (
	"context"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Metadata keys read by the server.
const (
	// HeaderAuthorization carries "Bearer <token>".
	HeaderAuthorization = "authorization"
	// HeaderTable carries the table the call writes, catalog.schema.table.
	HeaderTable = "x-databricks-zerobus-table-name"
)

// AllTables in Principal.Tables grants every table.
const AllTables = "*"

// Principal is an authenticated identity and the tables it may write.
type Principal struct {
	// Name identifies the principal in logs and in StreamMeta.Principal.
	Name string
	// Tables the principal may write, fully qualified; AllTables grants all.
	Tables []string
}

// CanWrite reports whether p may write table.
func (p Principal) CanWrite(table string) bool {
	return slices.Contains(p.Tables, table) || slices.Contains(p.Tables, AllTables)
}

// Auth maps bearer tokens to principals. A nil *Auth is open mode: no token
// is required and everybody may write every table.
type Auth struct {
	tokens map[string]Principal
}

// NewAuth returns an Auth accepting exactly the given tokens. The map is
// copied.
func NewAuth(tokens map[string]Principal) *Auth {
	a := &Auth{tokens: make(map[string]Principal, len(tokens))}
	for tok, p := range maps.All(tokens) {
		p.Tables = slices.Clone(p.Tables)
		a.tokens[tok] = p
	}
	return a
}

// openPrincipal is the identity of every caller in open mode.
var openPrincipal = Principal{Name: "anonymous", Tables: []string{AllTables}}

// authenticate returns the caller's principal. The token itself never
// appears in an error or a log line.
func (a *Auth) authenticate(ctx context.Context) (Principal, error) {
	if a == nil {
		return openPrincipal, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(HeaderAuthorization)
	if len(vals) == 0 {
		return Principal{}, status.Error(codes.Unauthenticated, "missing authorization metadata (want \"Bearer <token>\")")
	}
	if len(vals) > 1 {
		return Principal{}, status.Error(codes.Unauthenticated, "more than one authorization value")
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return Principal{}, status.Error(codes.Unauthenticated, "malformed authorization metadata (want \"Bearer <token>\")")
	}
	p, ok := a.tokens[strings.TrimSpace(tok)]
	if !ok {
		return Principal{}, status.Error(codes.Unauthenticated, "unknown bearer token")
	}
	return p, nil
}

// tableHeader returns the x-databricks-zerobus-table-name value ("" when
// absent).
func tableHeader(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(HeaderTable)
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
		return vals[0], nil
	default:
		return "", status.Errorf(codes.InvalidArgument, "more than one %s value", HeaderTable)
	}
}

// authorizeTable checks that the caller may write table and that the table
// header names it. With requireHeader (stream opens in authenticated mode)
// the header must be present; otherwise it is checked only when present.
// Permission is checked first, so a caller that guessed another
// principal's stream id learns nothing from a header mismatch, and the
// PERMISSION_DENIED message never names the table (on a resume or retire
// it is the stream's, possibly another principal's).
func (a *Auth) authorizeTable(ctx context.Context, p Principal, table string, requireHeader bool) error {
	if !p.CanWrite(table) {
		return status.Errorf(codes.PermissionDenied, "principal %q may not write this stream's table", p.Name)
	}
	h, err := tableHeader(ctx)
	if err != nil {
		return err
	}
	if h == "" {
		if a == nil || !requireHeader {
			return nil
		}
		return status.Errorf(codes.InvalidArgument, "missing %s metadata", HeaderTable)
	}
	if h != table {
		return status.Errorf(codes.InvalidArgument, "%s %q does not match the stream's table %q", HeaderTable, clip(h), table)
	}
	return nil
}
