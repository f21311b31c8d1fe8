package server

import (
	"errors"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream/internal/faults"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// validTableName reports whether name is a table name (record.CheckTable)
// that the stores keep as it is: in valid UTF-8 and with no white space
// around a part. A name that is not would be stored differently by the
// engines (bbolt's JSON metadata turns invalid bytes into U+FFFD, after
// which the same client's resume no longer matches).
func validTableName(name string) bool {
	if record.CheckTable(name) != nil || !utf8.ValidString(name) {
		return false
	}
	for p := range strings.SplitSeq(name, ".") {
		if strings.TrimSpace(p) != p {
			return false
		}
	}
	return true
}

// openCreate is the create handshake of both stream kinds. A persistent
// create whose request id (the x-zbstream-request-id metadata) the same
// principal already used on the same table returns that stream
// (idempotent create, scoped as owner.go says).
func (c *conn) openCreate(m *clientMsg) error {
	s, cr := c.s, m.create
	if cr == nil {
		return invalid("create_stream without its CreateIngestStreamRequest")
	}
	table := cr.GetTableName()
	if !validTableName(table) {
		return invalid("table_name %q is not catalog.schema.table in valid UTF-8", clip(table))
	}
	schema, err := newChecker(cr.GetRecordType(), cr.GetDescriptorProto(), cr.GetAvroSchemaJson())
	if err != nil {
		return invalid("create_stream: %v", err)
	}
	if err := s.opts.Auth.authorizeTable(c.ctx, c.principal, table, true); err != nil {
		return err
	}
	// A table's definition is checked after authorization: a refusal
	// names its columns.
	if schema, err = withTable(schema, s.opts.Tables.lookup(table)); err != nil {
		return invalid("create_stream: %v", err)
	}
	c.table, c.schema = table, schema
	if f, ok := c.takeOpenFault(FaultFailOpen); ok {
		return faultStatus(f, codes.Unavailable, "injected fault: open failed")
	}
	id, err := newStreamID(c.kind)
	if err != nil {
		return status.Errorf(codes.Internal, "stream id: %v", err)
	}
	meta := StreamMeta{ID: id, Kind: c.kind, Table: table, Principal: c.principal.Name, RecordType: int32(schema.Type())}
	switch schema.Type() {
	case ingestpb.RecordType_PROTO:
		meta.Descriptor = cr.GetDescriptorProto()
	case ingestpb.RecordType_AVRO:
		meta.AvroSchema = cr.GetAvroSchemaJson()
	}
	if c.kind == KindPersistent {
		if meta.RequestID, err = requestIDHeader(c.ctx); err != nil {
			return err
		}
	}
	stored, created, err := s.store.CreateStream(c.ctx, meta)
	if err != nil {
		return storeStatus(err)
	}
	if !created {
		switch {
		case !owns(stored, c.principal) || stored.Kind != KindPersistent || stored.Table != table:
			// The store scopes request ids by principal and table: this
			// is a broken Store, never a stream to hand out.
			return status.Errorf(codes.Internal, "store returned stream %q for another principal, table or kind", stored.ID)
		case stored.RecordType != meta.RecordType ||
			(schema.Type() == ingestpb.RecordType_PROTO && !record.SameDescriptor(stored.Descriptor, meta.Descriptor)) ||
			(schema.Type() == ingestpb.RecordType_AVRO && !sameAvroSchema(stored.AvroSchema, meta.AvroSchema)):
			return invalid("%s %q already names a stream with another record type, descriptor or Avro schema", HeaderRequestID, clip(meta.RequestID))
		case stored.Retired:
			return errRetired(stored.ID)
		}
	}
	c.id = stored.ID
	if err := c.attach(false); err != nil {
		return err
	}
	f, ok := c.takeOpenFault(FaultLoseOpenResponse, FaultOpenResponseKind, FaultStreamIDMissing)
	switch {
	case !ok:
		err = c.w.sendCreated(proto.String(c.id))
	case f.Kind == FaultLoseOpenResponse:
		return faultStatus(f, codes.Unavailable, "injected fault: connection dropped before the open response")
	case f.Kind == FaultOpenResponseKind && c.kind == KindPersistent:
		err = c.w.sendResumed(watermarkPtr(c.watermark))
	case f.Kind == FaultOpenResponseKind:
		err = c.w.sendResumed(proto.Int64(-1))
	case f.Kind == FaultStreamIDMissing:
		err = c.w.sendCreated(nil)
	}
	return err
}

// openResume is the resume handshake of a persistent stream. A stream of
// another principal is NOT_FOUND, exactly as a missing one.
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
	if errors.Is(err, ErrStreamNotFound) || (err == nil && !owns(meta, c.principal)) {
		return errNotFound(id)
	} else if err != nil {
		return storeStatus(err)
	}
	if meta.Kind != KindPersistent {
		return status.Errorf(codes.NotFound, "stream %q is not a persistent stream", clip(id))
	}
	if err := s.opts.Auth.authorizeTable(c.ctx, c.principal, meta.Table, true); err != nil {
		return err
	}
	c.table = meta.Table
	if f, ok := s.takeFault(faults.At{Open: true}, meta.Table, id, c.kind, FaultFailOpen); ok {
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
		if !record.SameDescriptor(r.GetDescriptorProto(), meta.Descriptor) {
			return invalid("resume_stream: descriptor_proto does not match the stream's descriptor")
		}
	}
	schema, err := newChecker(typ, meta.Descriptor, meta.AvroSchema)
	if err != nil {
		return status.Errorf(codes.Internal, "stored schema of stream %q: %v", id, err)
	}
	// The table's definition may have changed since the create (a server
	// restarted with other -tables): the stream goes on only if it fits.
	if schema, err = withTable(schema, s.opts.Tables.lookup(meta.Table)); err != nil {
		return invalid("resume_stream: %v", err)
	}
	c.id, c.schema = id, schema
	if err := c.attach(true); err != nil {
		return err
	}
	f, ok := c.takeOpenFault(FaultLoseOpenResponse, FaultOpenResponseKind, FaultResumeWatermark, FaultResumeWithoutWatermark)
	switch {
	case !ok:
		return c.w.sendResumed(watermarkPtr(c.watermark))
	case f.Kind == FaultLoseOpenResponse:
		return faultStatus(f, codes.Unavailable, "injected fault: connection dropped before the open response")
	case f.Kind == FaultOpenResponseKind:
		return c.w.sendCreated(proto.String(id))
	case f.Kind == FaultResumeWatermark:
		return c.w.sendResumed(proto.Int64(f.Watermark))
	default: // FaultResumeWithoutWatermark
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
