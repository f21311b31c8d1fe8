package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zbstream/zbstream/server"
)

// Lookup returns the principal a bearer token belongs to; a nil Lookup is
// open mode (no token asked for, every stream visible).
type Lookup func(token string) (server.Principal, bool)

// Limits bound what the handler holds: PageBytes of records a page,
// MaxConcurrent requests served at once, each waiting at most QueueWait for
// its turn before it gets 503. A client that does not read its answer
// holds its turn until the HTTP server's write timeout cuts it.
type Limits struct {
	PageBytes     int
	MaxConcurrent int
	QueueWait     time.Duration
}

// DefaultLimits are the limits of "zbstream serve".
func DefaultLimits() Limits {
	return Limits{PageBytes: DefaultPageBytes, MaxConcurrent: 4, QueueWait: 5 * time.Second}
}

// handler serves the admin API.
type handler struct {
	r     StoreReader
	srv   *server.Server // nil: a store only, no live counts
	auth  Lookup         // nil: open mode
	lim   Limits
	log   *slog.Logger
	mux   *http.ServeMux
	turns chan struct{} // lim.MaxConcurrent
}

// NewHandler returns the admin API over store, its tokens looked up by
// lookup (nil: open mode), its requests logged at debug level to log.
func NewHandler(store server.Store, lookup Lookup, log *slog.Logger, lim Limits) http.Handler {
	return newHandler(store, nil, lookup, log, lim)
}

// NewServerHandler is NewHandler over a running server's store, which
// also shows what the server counted of each Arrow stream's call
// (Server.ArrowCounts) in its streams.
func NewServerHandler(srv *server.Server, lookup Lookup, log *slog.Logger, lim Limits) http.Handler {
	return newHandler(srv.Store(), srv, lookup, log, lim)
}

func newHandler(store server.Store, srv *server.Server, lookup Lookup, log *slog.Logger, lim Limits) http.Handler {
	def := DefaultLimits()
	if lim.PageBytes <= 0 {
		lim.PageBytes = def.PageBytes
	}
	if lim.MaxConcurrent <= 0 {
		lim.MaxConcurrent = def.MaxConcurrent
	}
	if lim.QueueWait <= 0 {
		lim.QueueWait = def.QueueWait
	}
	h := &handler{r: StoreReader{Store: store, PageBytes: lim.PageBytes}, srv: srv, auth: lookup, lim: lim, log: log,
		mux: http.NewServeMux(), turns: make(chan struct{}, lim.MaxConcurrent)}
	h.mux.HandleFunc("GET /v1/streams", h.list)
	h.mux.HandleFunc("GET /v1/streams/{id}", h.show)
	h.mux.HandleFunc("GET /v1/streams/{id}/records", h.records)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		WriteJSON(w, http.StatusNotFound, ErrorBody{fmt.Sprintf("no such endpoint %s (try GET /v1/streams)", req.URL.Path)})
	})
	return h
}

type principalKey struct{}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.log.Debug("admin request", "method", req.Method, "path", req.URL.Path, "remote", req.RemoteAddr)
	if h.auth != nil {
		p, msg := h.authenticate(req)
		if msg != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="zbstream"`)
			WriteJSON(w, http.StatusUnauthorized, ErrorBody{msg})
			return
		}
		req = req.WithContext(context.WithValue(req.Context(), principalKey{}, p))
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		WriteJSON(w, http.StatusMethodNotAllowed, ErrorBody{"the admin API is read-only: use GET"})
		return
	}
	t := time.NewTimer(h.lim.QueueWait)
	defer t.Stop()
	select {
	case h.turns <- struct{}{}:
		defer func() { <-h.turns }()
	case <-t.C:
		w.Header().Set("Retry-After", "1")
		WriteJSON(w, http.StatusServiceUnavailable, ErrorBody{fmt.Sprintf("busy: %d admin requests in progress, try again", h.lim.MaxConcurrent)})
		return
	case <-req.Context().Done():
		return
	}
	h.mux.ServeHTTP(w, req)
}

// authenticate returns the principal of the request's bearer token, or a
// message (which never repeats the token).
func (h *handler) authenticate(req *http.Request) (server.Principal, string) {
	v := req.Header.Values("Authorization")
	if len(v) != 1 {
		return server.Principal{}, `missing Authorization header (want "Bearer <token>")`
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v[0]), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return server.Principal{}, `malformed Authorization header (want "Bearer <token>")`
	}
	p, ok := h.auth(strings.TrimSpace(tok))
	if !ok {
		return server.Principal{}, "wrong token: no principal has this bearer token"
	}
	return p, ""
}

// visible reports whether the caller may see stream m: in open mode every
// stream, otherwise only its own and only on a table its token is scoped
// to. The scope is the token's own: a name is not enough (serve's tokens
// refuses one name with two scopes, and this check holds even so).
func visible(ctx context.Context, m server.StreamMeta) bool {
	p, ok := ctx.Value(principalKey{}).(server.Principal)
	return !ok || (m.Principal == p.Name && p.CanWrite(m.Table))
}

func (h *handler) list(w http.ResponseWriter, req *http.Request) {
	metas, err := h.r.Streams(req.Context())
	if err != nil {
		h.storeError(w, "", err)
		return
	}
	out := StreamsList{Streams: []StreamInfo{}}
	for _, m := range metas {
		if visible(req.Context(), m) {
			out.Streams = append(out.Streams, h.info(m))
		}
	}
	WriteJSON(w, http.StatusOK, out)
}

// lookup returns the stream named by the path, or answers the request.
func (h *handler) lookup(w http.ResponseWriter, req *http.Request) (server.StreamMeta, bool) {
	id := req.PathValue("id")
	m, err := h.r.Stream(req.Context(), id)
	if err == nil && !visible(req.Context(), m) {
		err = server.ErrStreamNotFound // another principal's: as if it did not exist
	}
	if err != nil {
		h.storeError(w, id, err)
		return m, false
	}
	return m, true
}

func (h *handler) show(w http.ResponseWriter, req *http.Request) {
	if m, ok := h.lookup(w, req); ok {
		WriteJSON(w, http.StatusOK, h.info(m))
	}
}

// info is stream m as the API shows it, with the server's counts of an
// Arrow stream where it has them.
func (h *handler) info(m server.StreamMeta) StreamInfo {
	info := ToStreamInfo(m)
	if h.srv == nil || m.RecordType != server.RecordTypeArrow {
		return info
	}
	if c, ok := h.srv.ArrowCounts(m.ID); ok {
		info.Arrow = &ArrowCounts{
			FramesReceived: c.FramesReceived, RowsReceived: c.RowsReceived,
			FramesStored: c.FramesStored, RowsStored: c.RowsStored,
			FramesAcked: c.FramesAcked, RowsAcked: c.RowsAcked,
		}
	}
	return info
}

func (h *handler) records(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	from, limit := int64(0), DefaultLimit
	if v := q.Get("from"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			WriteJSON(w, http.StatusBadRequest, ErrorBody{fmt.Sprintf("from=%q: want an offset >= 0", v)})
			return
		}
		from = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			WriteJSON(w, http.StatusBadRequest, ErrorBody{fmt.Sprintf("limit=%q: want 1 to %d offsets", v, MaxLimit)})
			return
		}
		limit = n
	}
	m, ok := h.lookup(w, req)
	if !ok {
		return
	}
	p, err := h.r.Page(req.Context(), m, from, limit)
	if err != nil {
		h.storeError(w, m.ID, err)
		return
	}
	WriteJSON(w, http.StatusOK, p)
}

func (h *handler) storeError(w http.ResponseWriter, id string, err error) {
	switch {
	case errors.Is(err, server.ErrStreamNotFound):
		WriteJSON(w, http.StatusNotFound, ErrorBody{fmt.Sprintf("stream %q not found", id)})
	case errors.Is(err, server.ErrStoreClosed):
		WriteJSON(w, http.StatusServiceUnavailable, ErrorBody{"server shutting down"})
	default:
		h.log.Error("admin: store read failed", "stream", id, "err", err)
		WriteJSON(w, http.StatusInternalServerError, ErrorBody{"store read failed: " + err.Error()})
	}
}

// WriteJSON answers with v as indented JSON and status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
