package server

// The Unity Catalog tables API, as far as Zerobus clients read it: GET a
// table's definition, so that a program that fetches its table's schema
// from a workspace (Client.TableDescriptor, the official SDKs' dynamic
// path) fetches it from this server unchanged.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// TablesPath is where a workspace serves the Unity Catalog tables API,
// relative to the workspace URL; a table's definition is at TablesPath
// followed by its full name.
const TablesPath = "/api/2.1/unity-catalog/tables/"

// TablesHandler is an http.Handler serving GET (and HEAD) TablesPath +
// catalog.schema.table with the table's definition as Options.Tables
// holds it: the JSON object it was loaded from. Mount it on the admin
// address beside the TokenEndpoint.
//
// It is authorized as the gRPC server is: with an Auth, a request needs
// "Authorization: Bearer <token>" with a token of the Auth (a static one,
// or one the TokenEndpoint minted, the all-apis token of the official
// SDKs' schema fetch among them), whose principal may write the table;
// with a nil Auth (open mode) anyone may read. Answers, with a Unity
// Catalog error body ({"error_code", "message"}): 200 the definition; 401
// UNAUTHENTICATED for a missing, malformed, unknown or expired token; 403
// PERMISSION_DENIED for a table the principal may not write (whether or
// not it has a definition, so that a principal learns nothing of other
// tables); 404 TABLE_DOES_NOT_EXIST for a table without a definition; 400
// INVALID_PARAMETER_VALUE for a name that is not catalog.schema.table; 405
// for another method.
type TablesHandler struct {
	tables *Tables
	auth   *Auth
}

// NewTablesHandler returns the handler serving tables' definitions,
// authorized by auth (nil: open mode).
func NewTablesHandler(tables *Tables, auth *Auth) *TablesHandler {
	return &TablesHandler{tables: tables, auth: auth}
}

// ServeHTTP answers one request.
func (h *TablesHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		ucError(w, http.StatusMethodNotAllowed, "BAD_REQUEST", "method "+req.Method+" not allowed")
		return
	}
	name, ok := strings.CutPrefix(req.URL.Path, TablesPath)
	if !ok {
		ucError(w, http.StatusNotFound, "ENDPOINT_NOT_FOUND", "no such endpoint")
		return
	}
	p, err := h.principal(req)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="zbstream"`)
		ucError(w, http.StatusUnauthorized, "UNAUTHENTICATED", err.Error())
		return
	}
	if !validTableName(name) {
		ucError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", fmt.Sprintf("%q is not catalog.schema.table", clip(name)))
		return
	}
	if !p.CanWrite(name) {
		ucError(w, http.StatusForbidden, "PERMISSION_DENIED", fmt.Sprintf("principal %q may not use table %s", p.Name, name))
		return
	}
	d := h.tables.lookup(name)
	if d == nil {
		ucError(w, http.StatusNotFound, "TABLE_DOES_NOT_EXIST", fmt.Sprintf("Table '%s' does not exist.", name))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		_, _ = w.Write(d.raw) // a client gone away is no error of the server's
	}
}

// principal authenticates a request's bearer token.
func (h *TablesHandler) principal(req *http.Request) (Principal, error) {
	if h.auth == nil {
		return openPrincipal, nil
	}
	return h.auth.bearer(req.Header.Values("Authorization"), "header")
}

// ucError writes a Unity Catalog error answer.
func ucError(w http.ResponseWriter, code int, errorCode, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		ErrorCode string `json:"error_code"`
		Message   string `json:"message"`
	}{errorCode, message})
}
