package server

import (
	"context"
	"errors"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// retire implements RetireStream. Only the stream's owner may retire it;
// anybody else is told NOT_FOUND, as for an id that does not exist.
func (s *Server) retire(ctx context.Context, req *ingestpb.RetireStreamRequest) (*ingestpb.RetireStreamResponse, error) {
	p, err := s.opts.Auth.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	if why, ok := decodeError(req); ok {
		return nil, invalid("%s", why)
	}
	id, table := req.GetStreamId(), req.GetTableName()
	if id == "" {
		return nil, invalid("retire without stream_id")
	}
	if table == "" {
		return nil, invalid("retire without table_name")
	}
	meta, err := s.store.Stream(ctx, id)
	if errors.Is(err, ErrStreamNotFound) || (err == nil && !owns(meta, p)) {
		return nil, errNotFound(id)
	} else if err != nil {
		return nil, storeStatus(err)
	}
	if meta.Kind != KindPersistent {
		return nil, invalid("stream %q is ephemeral: only persistent streams can be retired", clip(id))
	}
	if err := s.opts.Auth.authorizeTable(ctx, p, meta.Table, false); err != nil {
		return nil, err
	}
	if table != meta.Table {
		// Checked after the permission, as authorizeTable says why.
		return nil, invalid("table_name %q is not the table of stream %q", clip(table), clip(id))
	}
	// The live writer is fenced before the retire is durable (it may still
	// fail), so it is told ABORTED, not NOT_FOUND: its resume then learns
	// the outcome (NOT_FOUND once retired).
	e := s.claim(id, nil, errRetiring)
	e.appendMu.Lock()
	w, err := s.store.Retire(ctx, id)
	e.appendMu.Unlock()
	s.release(id, nil)
	if err != nil {
		return nil, storeStatus(err)
	}
	s.log.Info("stream retired", "stream", id, "principal", p.Name, "watermark", w)
	return &ingestpb.RetireStreamResponse{}, nil
}
