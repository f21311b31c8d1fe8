package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

// DefaultPageBytes bounds the record bytes of one page by default. A page
// is held in memory about four times while it is written (the records
// read, compacted, and encoded), so with Limits.MaxConcurrent requests the
// endpoint holds at most about 64 MiB, plus one batch (at most the message
// limit) per request. (It was 16 MiB, with no limit on requests: 60
// clients asking for a page and never reading it pinned 4.4 GB.)
const DefaultPageBytes = 4 << 20

// StoreReader reads streams and pages of records from a store: the running
// server's (admin endpoint) or a bolt directory's ("streams -data").
// PageBytes bounds the record bytes of one page (a single batch can
// exceed it); 0 means DefaultPageBytes.
type StoreReader struct {
	Store     server.Store
	PageBytes int
}

// Streams returns every stream of the store.
func (r StoreReader) Streams(ctx context.Context) ([]server.StreamMeta, error) {
	return r.Store.Streams(ctx)
}

// Stream returns the stream id.
func (r StoreReader) Stream(ctx context.Context, id string) (server.StreamMeta, error) {
	return r.Store.Stream(ctx, id)
}

// Page returns the records of stream m stored at offsets
// from .. from+limit-1, stopping after PageBytes of records.
func (r StoreReader) Page(ctx context.Context, m server.StreamMeta, from int64, limit int) (RecordsPage, error) {
	p := RecordsPage{StreamID: m.ID, From: from, Watermark: m.Watermark, Records: []RecordInfo{}}
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
	var avroRecs *avroJSON // nil: an Avro stream's records shown as bytes
	if ingestpb.RecordType(m.RecordType) == ingestpb.RecordType_AVRO {
		avroRecs, _ = newAvroJSON(m.AvroSchema)
	}
	size, pageBytes := 0, r.PageBytes
	if pageBytes <= 0 {
		pageBytes = DefaultPageBytes
	}
	// add appends a batch's records (an Arrow frame's rows); false once
	// the page holds pageBytes (Next then follows the last batch added).
	add := func(b server.Batch) bool {
		if m.RecordType == server.RecordTypeArrow {
			p.Records = append(p.Records, arrowRows(m, b)...)
			for _, rec := range b.Records {
				size += len(rec)
			}
		} else {
			for i, rec := range b.Records {
				ri := RecordInfo{Offset: b.Offset, Index: i}
				switch {
				case isJSON && json.Valid(rec):
					ri.JSON = CompactJSON(rec)
				case avroRecs != nil:
					var err error
					if ri.JSON, err = avroRecs.render(rec); err != nil {
						ri.JSON, ri.Data = nil, rec
					}
				default:
					ri.Data = rec
				}
				p.Records = append(p.Records, ri)
				size += len(rec)
			}
		}
		if size >= pageBytes {
			p.Next = b.Offset + 1
			return false
		}
		return true
	}
	if br, ok := r.Store.(server.BatchReader); ok {
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
	batches, err := r.Store.Records(ctx, m.ID)
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

// CompactJSON puts a JSON record on one line.
func CompactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}
