package memtransport

import (
	"context"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// open is Transport.Open: it validates and performs the handshake and
// queues its answer, or the status that ends the call, for Recv.
func (s *Server) open(ctx context.Context, req streamio.OpenRequest) (streamio.Conn, error) {
	s.stats.opens.Add(1)
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	at := point{kind: req.Kind, open: true}
	if req.Resume {
		at.stream = req.StreamID
	}
	if f, ok := s.takeFault(at, FaultFailOpen); ok && f.AtOpen {
		return nil, f.status("injected fault: open failed")
	} else if ok {
		c := s.newConn(ctx, req.Kind)
		c.finish(f.status("injected fault: open refused"))
		return c, nil
	}
	c := s.newConn(ctx, req.Kind)
	if _, ok := s.takeFault(at, FaultHangOpen); ok {
		c.hung = true
		return c, nil
	}
	resp, err := s.handshake(c, req)
	if err != nil {
		c.finish(err)
		return c, nil
	}
	at.stream = c.st.id
	var f Fault
	var ok bool
	if req.Resume {
		f, ok = s.takeFault(at, FaultLoseOpenResponse, FaultOpenResponseKind, FaultResumeWatermark, FaultResumeWithoutWatermark)
	} else {
		f, ok = s.takeFault(at, FaultLoseOpenResponse, FaultOpenResponseKind, FaultStreamIDMissing)
	}
	if ok {
		if f.Kind == FaultLoseOpenResponse {
			c.finish(f.status("injected fault: connection dropped before the open response"))
			return c, nil
		}
		resp = hostileOpen(f, req, resp)
	}
	c.out(resp, 0)
	c.atPoint() // faults due right after the open (After = 0)
	return c, nil
}

// handshake validates req and performs the create or resume; it returns
// the true answer.
func (s *Server) handshake(c *conn, req streamio.OpenRequest) (core.Response, error) {
	switch {
	case req.Kind != core.Ephemeral && req.Kind != core.Persistent:
		return core.Response{}, connError(core.CodeUnimplemented, "unknown stream kind "+req.Kind.String())
	case req.RecordType != core.RecordProto && req.RecordType != core.RecordJSON && req.RecordType != core.RecordAvro:
		return core.Response{}, connError(core.CodeInvalidArgument, "record type "+req.RecordType.String()+" is not accepted")
	case req.Resume && req.Kind == core.Ephemeral:
		return core.Response{}, connError(core.CodeInvalidArgument, "an ephemeral stream cannot be resumed")
	case req.Resume && req.StreamID == "":
		return core.Response{}, connError(core.CodeInvalidArgument, "resume_stream without stream_id")
	case req.Resume:
		_, w, err := s.resume(c, req)
		if err != nil {
			return core.Response{}, err
		}
		return core.Response{Kind: core.RespResume, Offset: w, HasOffset: w != core.NoOffset}, nil
	}
	st, err := s.create(c, req)
	if err != nil {
		return core.Response{}, err
	}
	return core.Response{Kind: core.RespCreate, StreamID: st.id, HasStreamID: true}, nil
}

// hostileOpen is the answer an open-response fault gives instead of
// resp.
func hostileOpen(f Fault, req streamio.OpenRequest, resp core.Response) core.Response {
	switch {
	case f.Kind == FaultStreamIDMissing && !req.Resume:
		return core.Response{Kind: core.RespCreate}
	case f.Kind == FaultResumeWatermark && req.Resume:
		return core.Response{Kind: core.RespResume, Offset: f.Watermark, HasOffset: true}
	case f.Kind == FaultResumeWithoutWatermark && req.Resume:
		return core.Response{Kind: core.RespResume}
	case f.Kind == FaultOpenResponseKind && req.Resume:
		return core.Response{Kind: core.RespCreate, StreamID: req.StreamID, HasStreamID: true}
	case f.Kind == FaultOpenResponseKind && req.Kind == core.Persistent:
		return core.Response{Kind: core.RespResume, Offset: core.NoOffset, HasOffset: true}
	case f.Kind == FaultOpenResponseKind:
		return core.Response{Kind: core.RespAck, Offset: core.NoOffset, HasOffset: true}
	}
	return resp
}
