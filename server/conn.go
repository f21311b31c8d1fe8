package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
)

// errSuperseded ends a connection fenced by a newer resume (or repeated
// create) of its stream.
var errSuperseded = status.Error(codes.Aborted, "superseded by a newer connection to the stream")

// errRetiring fences the live writer of a stream that RetireStream is
// retiring.
var errRetiring = status.Error(codes.Aborted, "stream is being retired")

func errRetired(id string) error {
	return status.Errorf(codes.NotFound, "stream %q is retired", id)
}

func invalid(format string, a ...any) error {
	return status.Errorf(codes.InvalidArgument, format, a...)
}

func kindName(k StreamKind) string {
	switch k {
	case KindEphemeral:
		return "ephemeral"
	case KindPersistent:
		return "persistent"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// storeStatus maps a Store error to a status.
func storeStatus(err error) error {
	switch {
	case errors.Is(err, ErrStreamNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, ErrStoreClosed):
		return status.Error(codes.Unavailable, "store closed")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	return status.Errorf(codes.Internal, "store: %v", err)
}

// recvStatus maps an error of Recv to the status that ends the call; a
// clean end of the client's side maps to nil. (A message over
// Options.MaxMessageBytes arrives as malformed, see serverCodec; only one
// over gRPC's own limit, 4x that, ends in RESOURCE_EXHAUSTED from gRPC.)
func (s *Server) recvStatus(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	if _, ok := status.FromError(err); !ok {
		return status.FromContextError(err).Err()
	}
	return err
}

func faultStatus(f Fault, def codes.Code, defMsg string) error {
	code, msg := f.Code, f.Message
	if code == codes.OK {
		code = def
	}
	if msg == "" {
		msg = defMsg
	}
	return status.Error(code, msg)
}

// service adapts Server to the generated interface.
type service struct {
	ingestpb.UnimplementedZerobusServer
	s *Server
}

func (v *service) EphemeralStream(st grpc.BidiStreamingServer[ingestpb.EphemeralStreamRequest, ingestpb.EphemeralStreamResponse]) error {
	return v.s.serveStream(KindEphemeral, ephemeralWire{st})
}

func (v *service) PersistentStream(st grpc.BidiStreamingServer[ingestpb.PersistentStreamRequest, ingestpb.PersistentStreamResponse]) error {
	return v.s.serveStream(KindPersistent, persistentWire{st})
}

func (v *service) RetireStream(ctx context.Context, req *ingestpb.RetireStreamRequest) (*ingestpb.RetireStreamResponse, error) {
	return v.s.retire(ctx, req)
}

// conn is one call of EphemeralStream or PersistentStream. The handler
// goroutine is the committer: it takes what the receiver goroutine has
// validated, appends it (several requests per Append), sends one
// cumulative ack and acts on faults and close signals. Only the committer
// sends.
type conn struct {
	s         *Server
	w         wire
	kind      StreamKind
	principal Principal
	ctx       context.Context
	cancel    context.CancelCauseFunc

	id     string
	table  string
	schema *recordSchema
	entry  *streamEntry // set once the connection owns its stream

	q       queue
	maxRecv atomic.Int64 // highest offset received, at least told

	// told is the watermark the client was told at open: -1 for a create
	// (also a repeated one) or an ephemeral stream, W for a resume. Acks
	// are capped at max(told, highest offset received): a client that
	// starts again at 0 after a repeated create on a stream that already
	// has data must not be acknowledged offsets it has not sent (yet).
	told int64

	// committer state
	watermark int64 // committed
	lastAck   int64 // last true ack value sent (or the open watermark)
	seq       int   // ingest requests processed
	closing   bool
	endTimer  *time.Timer
}

// fence ends the connection with cause (it no longer owns its stream).
func (c *conn) fence(cause error) { c.cancel(cause) }

// fencedErr is the status of a connection whose context ended.
func (c *conn) fencedErr() error {
	cause := context.Cause(c.ctx)
	if cause == nil {
		return errSuperseded
	}
	if _, ok := status.FromError(cause); ok {
		return cause
	}
	return status.FromContextError(cause).Err()
}

func (c *conn) takeFault(kinds ...FaultKind) (Fault, bool) {
	return c.s.faults.take(c.table, c.id, c.kind, c.seq, kinds...)
}

func (s *Server) serveStream(kind StreamKind, w wire) error {
	ctx := w.context()
	p, err := s.opts.Auth.authenticate(ctx)
	if err != nil {
		s.log.Info("call rejected", "kind", kindName(kind), "err", err)
		return err
	}
	c := &conn{s: s, w: w, kind: kind, principal: p}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	defer c.cancel(nil)
	defer func() {
		if c.entry != nil {
			s.release(c.id, c)
		}
	}()
	first, err := w.recv()
	if err != nil {
		if err = s.recvStatus(err); err == nil {
			err = invalid("call ended before its first message")
		}
		return err
	}
	switch {
	case first.kind == msgMalformed:
		err = invalid("%s", first.malformed)
	case first.kind == msgCreate:
		err = c.openCreate(first)
	case first.kind == msgResume && kind == KindPersistent:
		err = c.openResume(first.resume)
	case kind == KindPersistent:
		err = invalid("first message must be create_stream or resume_stream, got %s", first.kind)
	default:
		err = invalid("first message must be create_stream, got %s", first.kind)
	}
	if err != nil {
		s.log.Info("open refused", "kind", kindName(kind), "principal", p.Name, "stream", c.id, "err", err)
		return err
	}
	s.log.Info("stream opened", "kind", kindName(kind), "principal", p.Name, "stream", c.id, "table", c.table, "watermark", c.watermark)
	err = c.run()
	s.log.Info("stream connection ended", "kind", kindName(kind), "stream", c.id, "watermark", c.watermark, "err", err)
	return err
}

func (c *conn) openCreate(m *clientMsg) error {
	s, cr := c.s, m.create
	if cr == nil {
		return invalid("create_stream without its CreateIngestStreamRequest")
	}
	table := cr.GetTableName()
	if !validTableName(table) {
		return invalid("table_name %q is not catalog.schema.table", table)
	}
	schema, err := newRecordSchema(cr.GetRecordType(), cr.GetDescriptorProto())
	if err != nil {
		return invalid("create_stream: %v", err)
	}
	if err := s.opts.Auth.authorizeTable(c.ctx, c.principal, table, true); err != nil {
		return err
	}
	c.table, c.schema = table, schema
	if f, ok := c.takeFault(FaultFailOpen); ok {
		return faultStatus(f, codes.Unavailable, "injected fault: open failed")
	}
	id, err := newStreamID(c.kind)
	if err != nil {
		return status.Errorf(codes.Internal, "stream id: %v", err)
	}
	meta := StreamMeta{ID: id, Kind: c.kind, Table: table, Principal: c.principal.Name, RecordType: int32(schema.typ)}
	if schema.typ == ingestpb.RecordType_PROTO {
		meta.Descriptor = cr.GetDescriptorProto()
	}
	if c.kind == KindPersistent {
		meta.RequestID = m.requestID
	}
	stored, created, err := s.store.CreateStream(c.ctx, meta)
	if err != nil {
		return storeStatus(err)
	}
	if !created {
		switch {
		case stored.Kind != KindPersistent || stored.Table != table:
			return invalid("client_request_id %q already names a stream of another table", m.requestID)
		case stored.RecordType != meta.RecordType ||
			(schema.typ == ingestpb.RecordType_PROTO && !sameDescriptor(stored.Descriptor, meta.Descriptor)):
			return invalid("client_request_id %q already names a stream with another record type or descriptor", m.requestID)
		case stored.Retired:
			return errRetired(stored.ID)
		}
	}
	c.id = stored.ID
	if err := c.attach(false); err != nil {
		return err
	}
	kinds := []FaultKind{FaultLoseOpenResponse, FaultWrongOpenResponse, FaultCreateWithoutID}
	f, ok := c.takeFault(kinds...)
	switch {
	case !ok:
		err = c.w.sendCreated(proto.String(c.id))
	case f.Kind == FaultLoseOpenResponse:
		return faultStatus(f, codes.Unavailable, "injected fault: connection dropped before the open response")
	case f.Kind == FaultWrongOpenResponse && c.kind == KindPersistent:
		err = c.w.sendResumed(watermarkPtr(c.watermark))
	case f.Kind == FaultWrongOpenResponse:
		err = c.w.sendResumed(proto.Int64(-1))
	case f.Kind == FaultCreateWithoutID:
		err = c.w.sendCreated(nil)
	}
	return err
}

func (c *conn) openResume(r *ingestpb.ResumeIngestStreamRequest) error {
	s := c.s
	id := r.GetStreamId()
	if id == "" {
		return invalid("resume_stream without stream_id")
	}
	typ := r.GetRecordType()
	if r.RecordType == nil || typ == ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED {
		return invalid("resume_stream without record_type")
	}
	meta, err := s.store.Stream(c.ctx, id)
	if errors.Is(err, ErrStreamNotFound) {
		return status.Errorf(codes.NotFound, "stream %q not found", id)
	} else if err != nil {
		return storeStatus(err)
	}
	if meta.Kind != KindPersistent {
		return status.Errorf(codes.NotFound, "stream %q is not a persistent stream", id)
	}
	if err := s.opts.Auth.authorizeTable(c.ctx, c.principal, meta.Table, true); err != nil {
		return err
	}
	c.table = meta.Table
	if f, ok := s.faults.take(meta.Table, id, c.kind, 0, FaultFailOpen); ok {
		return faultStatus(f, codes.Unavailable, "injected fault: open failed")
	}
	if meta.Retired {
		return errRetired(id)
	}
	if int32(typ) != meta.RecordType {
		return invalid("resume_stream: record_type %s does not match the stream's %s", typ, ingestpb.RecordType(meta.RecordType))
	}
	if typ == ingestpb.RecordType_PROTO {
		if len(r.GetDescriptorProto()) == 0 {
			return invalid("resume_stream: descriptor_proto is required for a PROTO stream")
		}
		if !sameDescriptor(r.GetDescriptorProto(), meta.Descriptor) {
			return invalid("resume_stream: descriptor_proto does not match the stream's descriptor")
		}
	}
	schema, err := newRecordSchema(typ, meta.Descriptor)
	if err != nil {
		return status.Errorf(codes.Internal, "stored descriptor of stream %q: %v", id, err)
	}
	c.id, c.schema = id, schema
	if err := c.attach(true); err != nil {
		return err
	}
	kinds := []FaultKind{FaultLoseOpenResponse, FaultWrongOpenResponse, FaultResumeWatermark, FaultResumeNoWatermark}
	f, ok := c.takeFault(kinds...)
	switch {
	case !ok:
		return c.w.sendResumed(watermarkPtr(c.watermark))
	case f.Kind == FaultLoseOpenResponse:
		return faultStatus(f, codes.Unavailable, "injected fault: connection dropped before the open response")
	case f.Kind == FaultWrongOpenResponse:
		return c.w.sendCreated(proto.String(id))
	case f.Kind == FaultResumeWatermark:
		return c.w.sendResumed(proto.Int64(f.Watermark))
	default: // FaultResumeNoWatermark
		return c.w.sendResumed(nil)
	}
}

// attach makes c the only writer of its stream (fencing any older
// connection), waits for an Append of the older one in progress, and then
// reads the watermark the connection continues from. resume says whether
// the client will be told that watermark (resume) or not (create).
func (c *conn) attach(resume bool) error {
	c.entry = c.s.claim(c.id, c, errSuperseded)
	c.entry.appendMu.Lock()
	defer c.entry.appendMu.Unlock()
	if c.entry.owner.Load() != c || c.ctx.Err() != nil {
		return c.fencedErr()
	}
	meta, err := c.s.store.Stream(c.ctx, c.id)
	if err != nil {
		return storeStatus(err)
	}
	if meta.Retired {
		return errRetired(c.id)
	}
	c.watermark, c.told = meta.Watermark, -1
	if resume {
		c.told = meta.Watermark
	}
	c.lastAck = c.told
	c.maxRecv.Store(c.told)
	return nil
}

// item is one validated ingest request, or the end of the client's side.
type item struct {
	seq   int
	batch Batch
	dup   bool // offset at or below what was already accepted: ack, never write
	size  int  // bytes counted toward maxQueuedBytes
	end   bool
	err   error // with end: the status ending the call (nil: clean end)
}

const (
	maxQueuedItems = 4096
	maxQueuedBytes = 64 << 20
	// recordOverhead is counted per record on top of its payload toward
	// maxQueuedBytes: the slice header that holds it (24 bytes on 64-bit)
	// and some more, so that a batch of millions of empty records cannot
	// hide from the bound.
	recordOverhead = 32
)

// queue passes items from the receiver to the committer; it is bounded so
// that a slow store pushes back on the client through gRPC flow control.
type queue struct {
	mu    sync.Mutex
	items []item
	bytes int
	ready chan struct{}
	space chan struct{}
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (q *queue) push(ctx context.Context, it item) bool {
	for {
		q.mu.Lock()
		if it.end || len(q.items) == 0 || (len(q.items) < maxQueuedItems && q.bytes+it.size <= maxQueuedBytes) {
			q.items = append(q.items, it)
			q.bytes += it.size
			q.mu.Unlock()
			notify(q.ready)
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-ctx.Done():
			return false
		}
	}
}

func (q *queue) take() []item {
	q.mu.Lock()
	items := q.items
	q.items, q.bytes = nil, 0
	q.mu.Unlock()
	notify(q.space)
	return items
}

// receive reads, checks and queues the client's ingest requests until the
// call ends. It runs in its own goroutine, tracked by Server.wg.
func (c *conn) receive(last int64) {
	defer c.s.wg.Done()
	n := 0
	for {
		m, err := c.w.recv()
		if err != nil {
			c.q.push(c.ctx, item{end: true, err: c.s.recvStatus(err)})
			return
		}
		if m.kind == msgMalformed {
			c.q.push(c.ctx, item{end: true, err: invalid("%s", m.malformed)})
			return
		}
		if m.kind != msgIngest {
			c.q.push(c.ctx, item{end: true, err: invalid("%s after the stream was opened", m.kind)})
			return
		}
		n++
		it, err := c.check(m, &last)
		if err != nil {
			c.q.push(c.ctx, item{end: true, err: err})
			return
		}
		it.seq = n
		if !c.q.push(c.ctx, it) {
			return
		}
	}
}

// check validates one ingest request against the stream and the offset
// last accepted on this connection.
func (c *conn) check(m *clientMsg, last *int64) (item, error) {
	if m.offset == nil {
		return item{}, invalid("ingest request without offset_id")
	}
	off := *m.offset
	switch {
	case off < 0:
		return item{}, invalid("offset_id %d is negative", off)
	case m.recType == ingestpb.RecordType_RECORD_TYPE_UNSPECIFIED:
		return item{}, invalid("ingest request at offset %d carries no record", off)
	case m.recType != c.schema.typ:
		return item{}, invalid("%s record at offset %d on a %s stream", m.recType, off, c.schema.typ)
	case len(m.records) == 0:
		return item{}, invalid("empty batch at offset %d", off)
	}
	for {
		cur := c.maxRecv.Load()
		if off <= cur || c.maxRecv.CompareAndSwap(cur, off) {
			break
		}
	}
	if off <= *last {
		return item{dup: true, batch: Batch{Offset: off}}, nil
	}
	if *last == math.MaxInt64 || off != *last+1 {
		return item{}, status.Errorf(codes.OutOfRange, "offset_id %d is not the next expected offset %d", off, *last+1)
	}
	if err := c.schema.check(m.records); err != nil {
		return item{}, invalid("offset %d: %v", off, err)
	}
	*last = off
	size := 0
	for _, r := range m.records {
		size += len(r) + recordOverhead
	}
	return item{batch: Batch{Offset: off, Records: m.records}, size: size}, nil
}

// run is the committer loop.
func (c *conn) run() error {
	s := c.s
	c.q.ready = make(chan struct{}, 1)
	c.q.space = make(chan struct{}, 1)
	s.wg.Add(1)
	go c.receive(c.watermark)
	defer func() {
		if c.endTimer != nil {
			c.endTimer.Stop()
		}
	}()
	var sessionC <-chan time.Time
	if s.opts.SessionAge > 0 {
		t := time.NewTimer(s.opts.SessionAge)
		defer t.Stop()
		sessionC = t.C
	}
	if done, err := c.process(nil, true); done {
		return err
	}
	for {
		var endC <-chan time.Time
		if c.endTimer != nil {
			endC = c.endTimer.C
		}
		select {
		case <-c.q.ready:
			if done, err := c.process(c.q.take(), false); done {
				return err
			}
		case <-sessionC:
			sessionC = nil
			if err := c.startClose(s.opts.CloseGrace); err != nil {
				return err
			}
		case <-endC:
			if done, err := c.process(c.q.take(), false); done {
				return err
			}
			return nil
		case <-c.ctx.Done():
			return c.fencedErr()
		case <-s.draining:
			if done, err := c.process(c.q.take(), false); done {
				return err
			}
			return status.Error(codes.Unavailable, "server shutting down")
		}
	}
}

// startClose sends close_stream_signal{d} and ends the call d later.
func (c *conn) startClose(d time.Duration) error {
	if c.closing {
		return nil
	}
	c.closing = true
	if err := c.w.sendClose(d); err != nil {
		return err
	}
	c.endTimer = time.NewTimer(max(d, 0))
	return nil
}

// process commits and acknowledges items in order, acting on faults at
// each request. With atOpen it only acts on the faults due right after the
// open (After = 0).
func (c *conn) process(items []item, atOpen bool) (done bool, err error) {
	var pending []Batch
	needAck := false
	flush := func(ack bool) error {
		if len(pending) > 0 {
			if err := c.commit(pending); err != nil {
				return err
			}
			pending, needAck = nil, true
		}
		if ack && needAck {
			needAck = false
			return c.ack()
		}
		return nil
	}
	point := func() (bool, error) {
		f, ok := c.takeFault(FaultCommitThenDrop, FaultDrop, FaultFail, FaultCloseSignal)
		if !ok {
			return false, nil
		}
		switch f.Kind {
		case FaultCommitThenDrop:
			if err := flush(false); err != nil {
				return true, err
			}
			return true, status.Error(codes.Unavailable, "injected fault: connection dropped after commit, before ack")
		case FaultDrop:
			if err := flush(true); err != nil {
				return true, err
			}
			return true, status.Error(codes.Unavailable, "injected fault: connection dropped")
		case FaultFail:
			if err := flush(true); err != nil {
				return true, err
			}
			return true, faultStatus(f, codes.Unavailable, "injected fault")
		default: // FaultCloseSignal
			if err := flush(true); err != nil {
				return true, err
			}
			return false, c.startClose(f.Delay)
		}
	}
	if atOpen {
		done, err := point()
		return done || err != nil, err
	}
	for _, it := range items {
		if it.end {
			if err := flush(true); err != nil {
				return true, err
			}
			return true, it.err
		}
		c.seq = it.seq
		if it.dup {
			needAck = true
		} else {
			pending = append(pending, it.batch)
		}
		if done, err := point(); done || err != nil {
			return true, err
		}
	}
	if err := flush(true); err != nil {
		return true, err
	}
	return false, nil
}

// commit appends batches, if c still owns the stream. Returns only once
// they are durable.
func (c *conn) commit(batches []Batch) error {
	e := c.entry
	e.appendMu.Lock()
	defer e.appendMu.Unlock()
	if e.owner.Load() != c || c.ctx.Err() != nil {
		return c.fencedErr()
	}
	if err := c.s.store.Append(c.ctx, c.id, batches); err != nil {
		if c.ctx.Err() != nil {
			return c.fencedErr()
		}
		return storeStatus(err)
	}
	c.watermark = batches[len(batches)-1].Offset
	return nil
}

// ack sends the cumulative ack of the committed watermark, capped at what
// the client sent on this connection or was told at open (see told),
// through the ack faults.
func (c *conn) ack() error {
	if c.ctx.Err() != nil {
		return c.fencedErr() // a fenced connection sends nothing more
	}
	v := min(c.watermark, max(c.told, c.maxRecv.Load()))
	if f, ok := c.takeFault(FaultDelayAcks); ok && f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return c.fencedErr()
		}
	}
	val := proto.Int64(v)
	if f, ok := c.takeFault(FaultAckAbove, FaultAckRegress, FaultAckMissing); ok {
		switch f.Kind {
		case FaultAckAbove:
			if m := max(c.maxRecv.Load(), v); m < math.MaxInt64 {
				val = proto.Int64(m + 1)
			} else {
				val = proto.Int64(math.MaxInt64)
			}
		case FaultAckRegress:
			val = proto.Int64(min(c.lastAck, v) - 1)
		case FaultAckMissing:
			val = nil
		}
	}
	if err := c.w.sendAck(val); err != nil {
		return err
	}
	c.lastAck = v
	if f, ok := c.takeFault(FaultRepeatAcks); ok {
		for range max(f.Repeat, 1) {
			if err := c.w.sendAck(val); err != nil {
				return err
			}
		}
	}
	return nil
}

// retire implements RetireStream.
func (s *Server) retire(ctx context.Context, req *ingestpb.RetireStreamRequest) (*ingestpb.RetireStreamResponse, error) {
	p, err := s.opts.Auth.authenticate(ctx)
	if err != nil {
		return nil, err
	}
	if why, ok := decodeError(req); ok {
		return nil, invalid("%s", why)
	}
	id := req.GetStreamId()
	if id == "" {
		return nil, invalid("retire without stream_id")
	}
	meta, err := s.store.Stream(ctx, id)
	if errors.Is(err, ErrStreamNotFound) {
		return nil, status.Errorf(codes.NotFound, "stream %q not found", id)
	} else if err != nil {
		return nil, storeStatus(err)
	}
	if meta.Kind != KindPersistent {
		return nil, invalid("stream %q is ephemeral: only persistent streams can be retired", id)
	}
	if err := s.opts.Auth.authorizeTable(ctx, p, meta.Table, false); err != nil {
		return nil, err
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
	return &ingestpb.RetireStreamResponse{LastCommittedOffset: watermarkPtr(w)}, nil
}
