package server

import (
	"context"
	"errors"
)

// ErrStreamNotFound: no stream has that id.
var ErrStreamNotFound = errors.New("server: stream not found")

// ErrStoreClosed: the store was closed.
var ErrStoreClosed = errors.New("server: store closed")

// StreamKind is the kind of a stored stream.
type StreamKind uint8

const (
	// KindEphemeral streams live for one connection.
	KindEphemeral StreamKind = iota + 1
	// KindPersistent streams are created once and resumed by id.
	KindPersistent
)

// StreamMeta describes a stored stream. Watermark is the highest committed
// offset (-1: nothing committed); Records counts stored records (a batch
// counts each of its records).
type StreamMeta struct {
	ID         string
	Kind       StreamKind
	Table      string
	Principal  string
	RecordType int32  // ingestpb.RecordType value
	Descriptor []byte // PROTO streams: the serialized DescriptorProto of the create
	AvroSchema string // AVRO streams: the writer schema of the create, Avro JSON as sent
	// ArrowSchema: Arrow streams (RecordType RecordTypeArrow), the schema
	// frame as an encapsulated IPC message; each batch then holds one
	// frame's encapsulated record batch message (see DecodeArrow).
	ArrowSchema []byte
	RequestID   string // persistent create idempotency key ("" for none)
	Watermark   int64
	Records     int64
	Retired     bool
}

// Batch is the records of one ingest call, stored under one offset.
type Batch struct {
	Offset  int64
	Records [][]byte
}

// Store keeps streams and their records. Implementations are safe for
// concurrent use. Every method that changes data returns only once the
// change is durable (for a durable engine: synced to disk), so the server
// acknowledges nothing that a crash could lose.
type Store interface {
	// CreateStream stores a new stream (meta.Watermark is ignored; a new
	// stream has -1). When meta.RequestID is not empty and a stream with the
	// same Principal, Table and RequestID exists, it returns that stream and
	// created == false instead (idempotent create). A RequestID is scoped
	// to its principal and table: another principal's (or table's) create
	// with the same RequestID makes a new stream.
	CreateStream(ctx context.Context, meta StreamMeta) (stored StreamMeta, created bool, err error)
	// Stream returns a stream's metadata or ErrStreamNotFound.
	Stream(ctx context.Context, id string) (StreamMeta, error)
	// Append stores batches of stream id (it must not modify or keep the
	// record slices: it copies what it keeps), in offset order, starting at
	// exactly the stream's watermark + 1 and dense, together with the new
	// watermark (the last batch's offset), atomically. Concurrent Appends,
	// to one stream or many, may share one sync (group commit).
	Append(ctx context.Context, id string, batches []Batch) error
	// Retire marks a stream retired and returns its watermark.
	Retire(ctx context.Context, id string) (watermark int64, err error)
	// Streams lists every stream, ordered by id.
	Streams(ctx context.Context) ([]StreamMeta, error)
	// Records returns a stream's stored batches in offset order.
	Records(ctx context.Context, id string) ([]Batch, error)
	// Close releases the store. It is idempotent.
	Close() error
}

// BatchReader is implemented by stores that can read one stored batch
// without reading the whole stream; the server uses it to compare a
// duplicate with what is stored (Options.StrictDuplicates) and falls back
// to Records for a Store without it.
type BatchReader interface {
	// Batch returns the batch stored at offset, or an error wrapping
	// ErrStreamNotFound (no such stream) or ErrBatchNotFound.
	Batch(ctx context.Context, id string, offset int64) (Batch, error)
}

// ErrBatchNotFound: the stream holds no batch at that offset.
var ErrBatchNotFound = errors.New("server: batch not found")
