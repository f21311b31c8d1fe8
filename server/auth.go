package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

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
	// HeaderRequestID carries a persistent create's idempotency key: a
	// create repeated with the same key by the same principal on the same
	// table returns the stream the first one made. It is metadata, not a
	// field, as the service's contract has none for it.
	HeaderRequestID = "x-zbstream-request-id"
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
// is required and everybody may write every table. An Auth is safe for
// concurrent use: AddToken may add tokens while the server runs (the OAuth
// token endpoint, TokenEndpoint, does).
type Auth struct {
	mu     sync.RWMutex
	tokens map[string]authEntry
	now    func() time.Time // time.Now; tests replace it
}

// authEntry is one accepted token: its principal and, for a token added
// with an expiry, when it stops being accepted (zero: never).
type authEntry struct {
	p       Principal
	expires time.Time
}

// NewAuth returns an Auth accepting exactly the given tokens (more can be
// added later with AddToken). The map is copied.
func NewAuth(tokens map[string]Principal) *Auth {
	a := &Auth{tokens: make(map[string]authEntry, len(tokens)), now: time.Now}
	for tok, p := range maps.All(tokens) {
		p.Tables = slices.Clone(p.Tables)
		a.tokens[tok] = authEntry{p: p}
	}
	return a
}

// ErrTokenExists is returned by AddToken for a token the Auth already
// accepts.
var ErrTokenExists = errors.New("server: the token is already accepted")

// AddToken makes the Auth accept token for principal p from now on, on new
// calls (a call already authenticated is not affected), until expires (the
// zero time: for good). A token it already accepts is refused with
// ErrTokenExists and changes nothing; an empty token, a principal without
// a name or an expiry already past is an error too. Tokens past their
// expiry are dropped as new ones are added, so a token endpoint that mints
// one per request keeps the Auth bounded by its rate and the lifetime.
// The token never appears in an error or a log line.
func (a *Auth) AddToken(token string, p Principal, expires time.Time) error {
	switch {
	case a == nil:
		return errors.New("server: AddToken on a nil (open mode) Auth")
	case strings.TrimSpace(token) != token || token == "" || strings.ContainsAny(token, " \t\r\n"):
		return errors.New("server: a token must be non-empty, without white space")
	case p.Name == "":
		return errors.New("server: the principal needs a name")
	}
	now := a.now()
	if !expires.IsZero() && !expires.After(now) {
		return errors.New("server: the token's expiry is already past")
	}
	p.Tables = slices.Clone(p.Tables)
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.tokens[token]; ok && !e.expired(now) {
		return ErrTokenExists
	}
	maps.DeleteFunc(a.tokens, func(_ string, e authEntry) bool { return e.expired(now) })
	a.tokens[token] = authEntry{p: p, expires: expires}
	return nil
}

// expired reports whether the entry has an expiry at or before now.
func (e authEntry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

// lookup returns the principal of an accepted token; an expired token is
// reported apart, so that the caller can say so.
func (a *Auth) lookup(token string) (p Principal, ok, expired bool) {
	a.mu.RLock()
	e, ok := a.tokens[token]
	a.mu.RUnlock()
	if !ok {
		return Principal{}, false, false
	}
	if e.expired(a.now()) {
		return Principal{}, false, true
	}
	return e.p, true, false
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
	p, err := a.bearer(md.Get(HeaderAuthorization), "metadata")
	if err != nil {
		return Principal{}, status.Error(codes.Unauthenticated, err.Error())
	}
	return p, nil
}

// bearer returns the principal of the values of an authorization header
// (gRPC metadata, or HTTP's Authorization header: where names which, for
// the messages): exactly one, "Bearer <token>" with a token of a.
func (a *Auth) bearer(vals []string, where string) (Principal, error) {
	if len(vals) == 0 {
		return Principal{}, fmt.Errorf("missing authorization %s (want \"Bearer <token>\")", where)
	}
	if len(vals) > 1 {
		return Principal{}, errors.New("more than one authorization value")
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return Principal{}, fmt.Errorf("malformed authorization %s (want \"Bearer <token>\")", where)
	}
	p, ok, expired := a.lookup(strings.TrimSpace(tok))
	switch {
	case expired:
		return Principal{}, errors.New("expired bearer token")
	case !ok:
		return Principal{}, errors.New("unknown bearer token")
	}
	return p, nil
}

// tableHeader returns the x-databricks-zerobus-table-name value ("" when
// absent).
func tableHeader(ctx context.Context) (string, error) { return oneHeader(ctx, HeaderTable) }

// requestIDHeader returns a persistent create's idempotency key, the
// x-zbstream-request-id value ("" when absent: a create that is not
// idempotent, as from a client that does not know the header).
func requestIDHeader(ctx context.Context) (string, error) { return oneHeader(ctx, HeaderRequestID) }

// oneHeader returns the one value of metadata key ("" when absent); two
// values are INVALID_ARGUMENT.
func oneHeader(ctx context.Context, key string) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(key)
	switch len(vals) {
	case 0:
		return "", nil
	case 1:
		return vals[0], nil
	default:
		return "", status.Errorf(codes.InvalidArgument, "more than one %s value", key)
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
