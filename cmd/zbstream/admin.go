package main

// The admin endpoint of "zbstream serve": a small, read-only JSON API over
// HTTP that "zbstream streams" reads. It lives here, not in server/, and
// reads the server's store.
//
//	GET /v1/streams                                  {"streams": [stream...]}
//	GET /v1/streams/{id}                             stream
//	GET /v1/streams/{id}/records?from=OFFSET&limit=N records page
//
// A stream is {"id", "kind", "table", "principal", "record_type",
// "descriptor_bytes", "watermark", "records", "retired"}. A records page is
// {"stream_id", "from", "watermark", "next", "records": [{"offset",
// "index", "json"} or {"offset", "index", "data" (base64)}]}: the batches
// stored at offsets from .. from+limit-1 (limit counts offsets, default
// 1000, at most 10000; a batch ingested at one offset gives all its
// records; a page stops early after 16 MiB of records), next is the offset
// to ask for next (past the watermark: none left). Errors are {"error": "..."} with 400, 401, 404, 405 or 503.
//
// With tokens, every request needs "Authorization: Bearer TOKEN" and a
// token sees only the streams its principal owns (those it created) on the
// tables the token is scoped to, as the Zerobus service answers another
// principal's resume with NOT_FOUND. In open mode everything is visible.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

const (
	adminDefaultLimit = 1000
	adminMaxLimit     = 10000
)

// adminPageBytes bounds the record bytes of one page (a single batch can
// exceed it); next then says where to continue. A page is held in memory
// about four times while it is written (the records read, compacted, and
// encoded), so with adminMaxConcurrent requests the endpoint holds at most
// about 64 MiB, plus one batch (at most the message limit) per request.
// A variable for tests. (It was 16 MiB, with no limit on requests: 60
// clients asking for a page and never reading it pinned 4.4 GB.)
var adminPageBytes = 4 << 20

// adminMaxConcurrent requests are served at once; a request waits at most
// adminQueueWait for its turn and then gets 503. A client that does not
// read its answer holds its turn until the server's write timeout
// (adminWriteTimeout in serve.go) cuts it.
var (
	adminMaxConcurrent = 4
	adminQueueWait     = 5 * time.Second
)

// streamInfo is a stream as the admin API and "streams -json" show it.
type streamInfo struct {
	ID              string `json:"id"`
	Kind            string `json:"kind"`
	Table           string `json:"table"`
	Principal       string `json:"principal"`
	RecordType      string `json:"record_type"`
	DescriptorBytes int    `json:"descriptor_bytes,omitempty"`
	Watermark       int64  `json:"watermark"`
	Records         int64  `json:"records"`
	Retired         bool   `json:"retired"`
}

// recordInfo is one stored record: JSON records as JSON, others (proto) as
// base64 bytes.
type recordInfo struct {
	Offset int64           `json:"offset"`
	Index  int             `json:"index"`
	JSON   json.RawMessage `json:"json,omitempty"`
	Data   []byte          `json:"data,omitempty"`
}

// recordsPage is the answer of /v1/streams/{id}/records.
type recordsPage struct {
	StreamID  string       `json:"stream_id"`
	From      int64        `json:"from"`
	Watermark int64        `json:"watermark"`
	Next      int64        `json:"next"`
	Records   []recordInfo `json:"records"`
}

type streamsList struct {
	Streams []streamInfo `json:"streams"`
}

type adminError struct {
	Error string `json:"error"`
}

func toStreamInfo(m server.StreamMeta) streamInfo {
	kind := "ephemeral"
	if m.Kind == server.KindPersistent {
		kind = "persistent"
	}
	rt := "unspecified"
	switch ingestpb.RecordType(m.RecordType) {
	case ingestpb.RecordType_JSON:
		rt = "json"
	case ingestpb.RecordType_PROTO:
		rt = "proto"
	}
	return streamInfo{
		ID: m.ID, Kind: kind, Table: m.Table, Principal: m.Principal, RecordType: rt,
		DescriptorBytes: len(m.Descriptor), Watermark: m.Watermark, Records: m.Records, Retired: m.Retired,
	}
}

// storeReader reads streams and pages of records from a store: the running
// server's (admin endpoint) or a bolt directory's ("streams -data").
type storeReader struct{ store server.Store }

func (r storeReader) streams(ctx context.Context) ([]server.StreamMeta, error) {
	return r.store.Streams(ctx)
}

func (r storeReader) stream(ctx context.Context, id string) (server.StreamMeta, error) {
	return r.store.Stream(ctx, id)
}

// page returns the records stored at offsets from .. from+limit-1.
func (r storeReader) page(ctx context.Context, m server.StreamMeta, from int64, limit int) (recordsPage, error) {
	p := recordsPage{StreamID: m.ID, From: from, Watermark: m.Watermark, Records: []recordInfo{}}
	p.Next = from
	if from > m.Watermark {
		return p, nil
	}
	last := m.Watermark
	if from <= m.Watermark-int64(limit)+1 { // no overflow: from+limit-1 <= watermark
		last = from + int64(limit) - 1
	}
	p.Next = last + 1
	if m.Records == 0 {
		p.Next = m.Watermark + 1 // nothing stored (the ack-only engine): no page has any
		return p, nil
	}
	isJSON := ingestpb.RecordType(m.RecordType) == ingestpb.RecordType_JSON
	size := 0
	// add appends a batch's records; false once the page holds
	// adminPageBytes (Next then follows the last batch added).
	add := func(b server.Batch) bool {
		for i, rec := range b.Records {
			ri := recordInfo{Offset: b.Offset, Index: i}
			if isJSON && json.Valid(rec) {
				ri.JSON = adminCompactJSON(rec)
			} else {
				ri.Data = rec
			}
			p.Records = append(p.Records, ri)
			size += len(rec)
		}
		if size >= adminPageBytes {
			p.Next = b.Offset + 1
			return false
		}
		return true
	}
	if br, ok := r.store.(server.BatchReader); ok {
		for off := from; off <= last; off++ {
			b, err := br.Batch(ctx, m.ID, off)
			if errors.Is(err, server.ErrBatchNotFound) {
				continue // an engine that keeps no records (ack-only)
			}
			if err != nil {
				return p, err
			}
			if !add(b) {
				break
			}
		}
		return p, nil
	}
	batches, err := r.store.Records(ctx, m.ID)
	if err != nil {
		return p, err
	}
	for _, b := range batches {
		if b.Offset >= from && b.Offset <= last && !add(b) {
			break
		}
	}
	return p, nil
}

// adminCompactJSON puts a JSON record on one line.
func adminCompactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

// adminHandler serves the admin API.
type adminHandler struct {
	r      storeReader
	tokens tokenTable // empty: open mode
	log    *slog.Logger
	mux    *http.ServeMux
	turns  chan struct{} // adminMaxConcurrent
}

func newAdminHandler(store server.Store, tokens tokenTable, log *slog.Logger) http.Handler {
	h := &adminHandler{r: storeReader{store}, tokens: tokens, log: log, mux: http.NewServeMux(),
		turns: make(chan struct{}, adminMaxConcurrent)}
	h.mux.HandleFunc("GET /v1/streams", h.list)
	h.mux.HandleFunc("GET /v1/streams/{id}", h.show)
	h.mux.HandleFunc("GET /v1/streams/{id}/records", h.records)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		adminWriteJSON(w, http.StatusNotFound, adminError{fmt.Sprintf("no such endpoint %s (try GET /v1/streams)", req.URL.Path)})
	})
	return h
}

type principalKey struct{}

func (h *adminHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.log.Debug("admin request", "method", req.Method, "path", req.URL.Path, "remote", req.RemoteAddr)
	if len(h.tokens) > 0 {
		p, msg := h.authenticate(req)
		if msg != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="zbstream"`)
			adminWriteJSON(w, http.StatusUnauthorized, adminError{msg})
			return
		}
		req = req.WithContext(context.WithValue(req.Context(), principalKey{}, p))
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		adminWriteJSON(w, http.StatusMethodNotAllowed, adminError{"the admin API is read-only: use GET"})
		return
	}
	t := time.NewTimer(adminQueueWait)
	defer t.Stop()
	select {
	case h.turns <- struct{}{}:
		defer func() { <-h.turns }()
	case <-t.C:
		w.Header().Set("Retry-After", "1")
		adminWriteJSON(w, http.StatusServiceUnavailable, adminError{fmt.Sprintf("busy: %d admin requests in progress, try again", adminMaxConcurrent)})
		return
	case <-req.Context().Done():
		return
	}
	h.mux.ServeHTTP(w, req)
}

// authenticate returns the principal of the request's bearer token, or a
// message (which never repeats the token).
func (h *adminHandler) authenticate(req *http.Request) (server.Principal, string) {
	v := req.Header.Values("Authorization")
	if len(v) != 1 {
		return server.Principal{}, `missing Authorization header (want "Bearer <token>")`
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v[0]), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return server.Principal{}, `malformed Authorization header (want "Bearer <token>")`
	}
	p, ok := h.tokens.lookup(strings.TrimSpace(tok))
	if !ok {
		return server.Principal{}, "wrong token: no principal has this bearer token"
	}
	return p, ""
}

// visible reports whether the caller may see stream m: in open mode every
// stream, otherwise only its own and only on a table its token is scoped
// to. The scope is the token's own: a name is not enough (buildTokens
// refuses one name with two scopes, and this check holds even so).
func adminVisible(ctx context.Context, m server.StreamMeta) bool {
	p, ok := ctx.Value(principalKey{}).(server.Principal)
	return !ok || (m.Principal == p.Name && p.CanWrite(m.Table))
}

func (h *adminHandler) list(w http.ResponseWriter, req *http.Request) {
	metas, err := h.r.streams(req.Context())
	if err != nil {
		h.storeError(w, "", err)
		return
	}
	out := streamsList{Streams: []streamInfo{}}
	for _, m := range metas {
		if adminVisible(req.Context(), m) {
			out.Streams = append(out.Streams, toStreamInfo(m))
		}
	}
	adminWriteJSON(w, http.StatusOK, out)
}

// lookup returns the stream named by the path, or answers the request.
func (h *adminHandler) lookup(w http.ResponseWriter, req *http.Request) (server.StreamMeta, bool) {
	id := req.PathValue("id")
	m, err := h.r.stream(req.Context(), id)
	if err == nil && !adminVisible(req.Context(), m) {
		err = server.ErrStreamNotFound // another principal's: as if it did not exist
	}
	if err != nil {
		h.storeError(w, id, err)
		return m, false
	}
	return m, true
}

func (h *adminHandler) show(w http.ResponseWriter, req *http.Request) {
	if m, ok := h.lookup(w, req); ok {
		adminWriteJSON(w, http.StatusOK, toStreamInfo(m))
	}
}

func (h *adminHandler) records(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	from, limit := int64(0), adminDefaultLimit
	if v := q.Get("from"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			adminWriteJSON(w, http.StatusBadRequest, adminError{fmt.Sprintf("from=%q: want an offset >= 0", v)})
			return
		}
		from = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > adminMaxLimit {
			adminWriteJSON(w, http.StatusBadRequest, adminError{fmt.Sprintf("limit=%q: want 1 to %d offsets", v, adminMaxLimit)})
			return
		}
		limit = n
	}
	m, ok := h.lookup(w, req)
	if !ok {
		return
	}
	p, err := h.r.page(req.Context(), m, from, limit)
	if err != nil {
		h.storeError(w, m.ID, err)
		return
	}
	adminWriteJSON(w, http.StatusOK, p)
}

func (h *adminHandler) storeError(w http.ResponseWriter, id string, err error) {
	switch {
	case errors.Is(err, server.ErrStreamNotFound):
		adminWriteJSON(w, http.StatusNotFound, adminError{fmt.Sprintf("stream %q not found", id)})
	case errors.Is(err, server.ErrStoreClosed):
		adminWriteJSON(w, http.StatusServiceUnavailable, adminError{"server shutting down"})
	default:
		h.log.Error("admin: store read failed", "stream", id, "err", err)
		adminWriteJSON(w, http.StatusInternalServerError, adminError{"store read failed: " + err.Error()})
	}
}

func adminWriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
