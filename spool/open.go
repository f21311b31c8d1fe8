package spool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/record"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

// Open's work: the directory, its lock and header, the log read and its
// torn tail cut, the stream resumed and what the server lacks sent again.

// makeDir creates dir if it is missing, and makes its name durable (its
// parent synced): a spool whose directory a power loss could take away
// would lose calls that returned.
func makeDir(dir string) error {
	if info, err := os.Stat(dir); err == nil {
		if !info.IsDir() {
			return fmt.Errorf("spool: %s is not a directory", dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("spool: creating the spool directory: %w", err)
	}
	return syncDir(filepath.Dir(filepath.Clean(dir)))
}

// wantMeta is the header the options describe.
func (o *Options) wantMeta() (meta, error) {
	m := meta{Table: o.Table, RecordType: "json"}
	if o.AvroSchema != "" {
		if o.ProtoMessage != nil {
			return m, &zbstream.ConfigError{Field: "AvroSchema", Reason: "excludes ProtoMessage"}
		}
		m.RecordType, m.AvroSchema = "avro", o.AvroSchema
	}
	if o.ProtoMessage != nil {
		md := o.ProtoMessage.ProtoReflect().Descriptor()
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToDescriptorProto(md))
		if err != nil {
			return m, fmt.Errorf("spool: encoding the descriptor of %s: %w", md.FullName(), err)
		}
		m.RecordType, m.Message, m.Descriptor = "proto", string(md.FullName()), b
	}
	return m, nil
}

// check compares the stored header with the one the options describe.
func (m *meta) check(want meta, streamID string) error {
	switch {
	case m.Table != want.Table:
		return &MismatchError{Field: "table", Spool: m.Table, Given: want.Table}
	case m.RecordType != want.RecordType:
		return &MismatchError{Field: "record type", Spool: m.RecordType, Given: want.RecordType}
	case m.Message != want.Message:
		return &MismatchError{Field: "message", Spool: m.Message, Given: want.Message}
	case m.AvroSchema != want.AvroSchema:
		return &MismatchError{Field: "Avro schema", Spool: clipSchema(m.AvroSchema), Given: clipSchema(want.AvroSchema)}
	case streamID != "" && m.StreamID != "" && streamID != m.StreamID:
		return &MismatchError{Field: "stream id", Spool: m.StreamID, Given: streamID}
	}
	if !record.SameDescriptor(m.Descriptor, want.Descriptor) {
		return &MismatchError{Field: "descriptor", Spool: fmt.Sprintf("%s (%d bytes)", m.Message, len(m.Descriptor)),
			Given: fmt.Sprintf("%s (%d bytes), a changed message", want.Message, len(want.Descriptor))}
	}
	return nil
}

// open does Open's work under the lock.
func (s *Spool) open(ctx context.Context, client *zbstream.Client) error {
	o := &s.opts
	want, err := o.wantMeta()
	if err != nil {
		return err
	}
	if s.check, err = newChecker(want); err != nil {
		return err
	}
	m, ok, err := readMeta(o.Dir)
	if err != nil {
		return err
	}
	gapFrom := int64(-1)
	if ok && m.Repair != nil {
		gapFrom = m.Repair.From
	}
	if !ok {
		// Checked before openWAL cuts anything.
		if segs, err := listSegments(o.Dir); err != nil {
			return err
		} else if len(segs) > 0 {
			return &CorruptError{File: o.Dir, Reason: "log segments without a header"}
		}
	}
	w, last, err := openWAL(o.Dir, o.SegmentBytes, gapFrom)
	if err != nil {
		return err
	}
	s.w = w
	s.st.torn.Store(w.tornBytes)
	if !ok {
		m = want
		var b [16]byte
		_, _ = rand.Read(b[:])
		m.RequestID = hex.EncodeToString(b[:])
		if o.StreamID == "" {
			// The idempotency key is made durable before the create.
			if err := writeMeta(o.Dir, m); err != nil {
				return err
			}
		}
	} else if err := m.check(want, o.StreamID); err != nil {
		return err
	}

	sopts := append(append([]zbstream.StreamOption{}, o.StreamOptions...), zbstream.WithMaxCallBytes(o.MaxCallBytes))
	if o.AvroSchema != "" {
		sopts = append(sopts, zbstream.WithAvroSchema(o.AvroSchema))
	}
	if o.ProtoMessage != nil {
		sopts = append(sopts, zbstream.WithProtoMessage(o.ProtoMessage))
	}
	if m.StreamID == "" && o.StreamID == "" {
		// The request id was made durable before the create: a crash
		// before the id below is written gets the same stream back.
		s.stream, err = client.CreatePersistentStream(ctx, o.Table, append(sopts, zbstream.WithClientRequestID(m.RequestID))...)
		if err != nil {
			return fmt.Errorf("spool: creating the stream: %w", err)
		}
		m.StreamID = s.stream.StreamID()
		if err := writeMeta(o.Dir, m); err != nil {
			return err
		}
	} else {
		id := m.StreamID
		if id == "" {
			id = o.StreamID // a new spool adopts the stream once it resumed
		}
		s.stream, err = client.ResumeStream(ctx, o.Table, id, sopts...)
		if err != nil {
			return fmt.Errorf("spool: resuming stream %s: %w", id, err)
		}
		if m.StreamID == "" {
			m.StreamID = id
			if err := writeMeta(o.Dir, m); err != nil {
				return err
			}
		}
	}
	wm := s.stream.LastDurable()

	if len(w.segs) == 0 {
		if err := w.start(wm + 1); err != nil {
			return err
		}
		if err := s.repaired(m, wm); err != nil {
			return err
		}
		s.publish()
		return nil
	}
	next := w.next()
	if wm > next-1 && m.Repair == nil {
		return &WatermarkError{StreamID: m.StreamID, Watermark: wm, First: w.first(), Last: next - 1}
	}
	if wm > next-1 {
		// A repair moved the log's end aside and the server holds some of
		// it: continue after the watermark, so that no new call gets an
		// offset the server holds. Everything the log keeps is at or
		// below it: the new segment's name is made durable before the old
		// ones are removed, and their removal before the repair record
		// is cleared (a crash in between leaves the gap that scanLog
		// tolerates while the record is there).
		if err := w.roll(wm + 1); err != nil {
			return err
		}
		last = nil
		if _, err := w.trim(wm); err != nil {
			return err
		}
		if err := syncDir(o.Dir); err != nil {
			return err
		}
		next = wm + 1
	}
	if _, err := w.trim(wm); err != nil {
		return err
	}
	if next-1 > wm && w.first() > wm+1 {
		return &WatermarkError{StreamID: m.StreamID, Watermark: wm, First: w.first(), Last: next - 1}
	}
	// Hand the entries above the watermark to the stream, in order: the
	// sealed segments (read whole, a torn entry in one is corruption), then
	// the active one (already read, its tail already cut).
	for i, sg := range w.segs {
		ents := last
		if i < len(w.segs)-1 {
			if ents, err = readSegment(sg); err != nil {
				return err
			}
			if sg.next != w.segs[i+1].first {
				return &CorruptError{File: sg.path, Reason: fmt.Sprintf("segment ends at offset %d, the next starts at %d", sg.next-1, w.segs[i+1].first)}
			}
		}
		for j := range ents {
			e := &ents[j]
			if e.offset <= wm {
				s.st.dropped.Add(1)
				continue
			}
			if err := s.handOff(ctx, e); err != nil {
				return err
			}
			s.st.resent.Add(1)
		}
	}
	if err := s.repaired(m, wm); err != nil {
		return err
	}
	if err := w.openActive(); err != nil {
		return err
	}
	s.publish()
	return nil
}

// repaired ends a repair's reconciliation, once the log continues after
// the server's watermark wm: the offsets the repair moved aside that the
// server does not hold are lost (new calls get them again, since the
// stream's offsets are dense); they go to Stats.Lost, and the repair
// record is cleared.
func (s *Spool) repaired(m meta, wm int64) error {
	r := m.Repair
	if r == nil {
		return nil
	}
	lost := span(max(r.From, wm+1), r.To)
	s.st.lostFirst.Store(lost.First)
	s.st.lostCount.Store(lost.Count)
	m.Repair = nil
	return writeMeta(s.opts.Dir, m)
}

// clipSchema shortens an Avro schema for a *MismatchError's message.
func clipSchema(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:77] + "..."
}
