package writer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/record"
)

// DefaultMaxOpenStreams is how many streams a Writer keeps open at most
// unless Config.MaxOpenStreams says otherwise.
const DefaultMaxOpenStreams = 16

// Config configures a Writer. The zero value is valid: persistent JSON
// tables, at most DefaultMaxOpenStreams streams open, stream ids kept in
// memory (a MemoryStore).
type Config struct {
	// MaxOpenStreams caps the streams open at once (0: 16). At the cap,
	// the least recently used table's stream is flushed and closed to make
	// room, and opened again when the table is written again.
	MaxOpenStreams int
	// Store keeps the stream id of every persistent table (see Store);
	// nil keeps them in memory, for this process only. Give a FileStore
	// for a new process to resume every table's stream.
	Store Store
	// Options are the stream options of every table, before the table's
	// own (TableConfig.Options).
	Options []zbstream.StreamOption
	// Table, if set, is asked once per table, when the table is first
	// written, for its kind and its own stream options; an error refuses
	// the table (its calls return it as a *TableError). nil: every table
	// is persistent, with Options.
	Table func(table string) (TableConfig, error)
	// OnAck, if set, is called once for every offset of every table that
	// becomes durable: for one table in offset order, one call at a time;
	// different tables' calls may run concurrently. A slow OnAck slows
	// its table's ingest ([zbstream.WithCallbackQueue]); a panic fails
	// the table. It replaces any [zbstream.WithOnAck] in the stream
	// options.
	OnAck func(table string, offset int64)
	// OnFail, if set, is called once for every accepted offset of a table
	// that fails with its stream, in order, as OnAck is. It replaces any
	// [zbstream.WithOnFail] in the stream options.
	OnFail func(table string, offset int64, err error)
}

// TableConfig is how a Writer opens one table's streams.
type TableConfig struct {
	// Ephemeral makes the table's streams ephemeral (at-least-once, see
	// [zbstream.Client.CreateStream]) instead of persistent (exactly-once,
	// resumed by id).
	Ephemeral bool
	// Options are the table's stream options, after Config.Options.
	Options []zbstream.StreamOption
}

// Writer writes records into many tables through one [zbstream.Client],
// with at most MaxOpenStreams streams open: one stream per table, opened
// when the table is first written, closed (after a flush) when its slot
// is needed for another table, and opened again when the table is written
// again. A persistent table keeps one stream for life: it is created
// once, its id saved in the Store before anything is sent, and resumed by
// that id on every reopen, in this process or in the next, so that the
// table is exactly-once as one persistent stream is. A reopen in the same
// Writer is checked as a reconnect is (protocol.md §5.3; the Writer
// resumes with [zbstream.WithHistory]): the server's watermark must lie
// between what the table's last stream saw durable and the highest offset
// it sent, so a stream that another writer added to meanwhile (a second
// process on the same store) fails the table with a
// *[zbstream.ProtocolError] before anything is sent, rather than numbering
// the table's next call after records this Writer never sent. Every
// method is safe for concurrent use.
//
// Offsets are per table. A persistent table's offsets are its stream's:
// after a restart, Watermark says where the table's source replays from.
// An ephemeral table's offsets continue across its streams (each new
// stream's calls are numbered after the previous stream's).
//
// A table that fails (its stream failed: recovery gave up, the server
// refused a call, a callback panicked) fails alone. Its calls, Flush and
// Close return a *TableError naming it and wrapping
// [zbstream.ErrStreamFailed] and the cause; OnFail reports its offsets
// that did not land; Failed lists it. The failure sticks, so that no
// record lands after a gap, until Reset: Reset returns the calls that did
// not land, and the table's next call opens its stream afresh. For a
// persistent table, Watermark then tells what the server holds, and the
// table's source is replayed from the record after it, as after a
// restart. The other tables go on meanwhile.
type Writer struct {
	c        *zbstream.Client
	cfg      Config
	maxOpen  int
	store    Store
	withAcks bool

	mu      sync.Mutex
	tables  map[string]*wtable
	open    int           // tables holding a slot: opening, open or closing
	tick    uint64        // the use clock of the LRU
	waiters int           // goroutines waiting on changed
	changed chan struct{} // closed and replaced when a waiter may go on
	closing bool          // Close was called
	closed  chan struct{} // closed when Close has finished
	result  error         // Close's result
	stats   Stats
}

// Stats counts what a Writer has done so far.
type Stats struct {
	// Tables written so far, Open of them with a stream open now, and
	// Failed of them failed (until Reset).
	Tables, Open, Failed int
	// Creates and Resumes count the streams opened: created (a new
	// persistent stream, or an ephemeral one) or resumed by a stored id.
	Creates, Resumes int64
	// Evictions counts the streams closed to make room for another table.
	Evictions int64
}

// New returns a Writer over c with cfg. Close the Writer before the
// Client. A nil c or a negative MaxOpenStreams is a
// *[zbstream.ConfigError].
func New(c *zbstream.Client, cfg Config) (*Writer, error) {
	if c == nil {
		return nil, &zbstream.ConfigError{Field: "Client", Reason: "must not be nil"}
	}
	if cfg.MaxOpenStreams < 0 {
		return nil, &zbstream.ConfigError{Field: "MaxOpenStreams", Reason: fmt.Sprintf("must not be negative, got %d", cfg.MaxOpenStreams)}
	}
	w := &Writer{c: c, cfg: cfg, maxOpen: cfg.MaxOpenStreams, store: cfg.Store,
		withAcks: cfg.OnAck != nil || cfg.OnFail != nil,
		tables:   map[string]*wtable{}, changed: make(chan struct{}), closed: make(chan struct{})}
	if w.maxOpen == 0 {
		w.maxOpen = DefaultMaxOpenStreams
	}
	if w.store == nil {
		w.store = &MemoryStore{}
	}
	w.cfg.Options = slices.Clone(cfg.Options)
	return w, nil
}

// IngestRecord ingests one record into table and returns its offset in
// the table once accepted, as [zbstream.Stream.IngestRecord] does; Flush
// makes it durable. It opens the table's stream if it is not open, and,
// at the cap of open streams, first flushes and closes the least recently
// used one; it blocks, honouring ctx, while every open stream is in use
// by other calls. Errors are a *TableError naming table: an invalid table
// name (a *[zbstream.ConfigError]), [zbstream.ErrClosed] after Close,
// [zbstream.ErrStreamFailed] and the cause while the table is failed (see
// Writer), the stream's own errors (*[zbstream.LimitError], ...), or
// ctx's cause.
func (w *Writer) IngestRecord(ctx context.Context, table string, record []byte) (int64, error) {
	return w.ingest(ctx, table, record, nil, false)
}

// IngestBatch ingests records into table as one call under one offset, as
// [zbstream.Stream.IngestBatch] does (an empty batch gets
// [zbstream.NoOffset]), and returns the offset in the table once
// accepted. It blocks, honours ctx and fails as IngestRecord does (errors
// are a *TableError).
func (w *Writer) IngestBatch(ctx context.Context, table string, records [][]byte) (int64, error) {
	return w.ingest(ctx, table, nil, records, true)
}

// IngestJSON marshals v with encoding/json and ingests it into table as
// one record, which must be a JSON object (otherwise an error wrapping
// [zbstream.ErrRecordType]); it blocks, honours ctx and fails as
// IngestRecord does (errors are a *TableError).
func (w *Writer) IngestJSON(ctx context.Context, table string, v any) (int64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return zbstream.NoOffset, tableErr(table, fmt.Errorf("zbstream: marshalling a JSON record: %w", err))
	}
	if record.CheckJSON(b) != nil {
		return zbstream.NoOffset, tableErr(table, fmt.Errorf("%w: a JSON record must be an object, got %.20s", zbstream.ErrRecordType, b))
	}
	return w.IngestRecord(ctx, table, b)
}

func (w *Writer) ingest(ctx context.Context, table string, one []byte, many [][]byte, batch bool) (int64, error) {
	t, s, base, err := w.acquire(ctx, table)
	if err != nil {
		return zbstream.NoOffset, err
	}
	var off int64
	if batch {
		off, err = s.IngestBatch(ctx, many)
	} else {
		off, err = s.IngestRecord(ctx, one)
	}
	w.release(t)
	if err != nil {
		if s.Err() != nil {
			err = w.streamFailed(t, s, err)
		}
		return zbstream.NoOffset, tableErr(table, err)
	}
	if off == zbstream.NoOffset {
		return zbstream.NoOffset, nil
	}
	return base + off, nil
}

// Watermark returns the highest offset of table known durable on the
// server, or [zbstream.NoOffset]. For a persistent table with a stored
// stream, it opens the stream if it is not open (resuming it by id, as
// every open does), so that in a new process it is the server's
// watermark: replay the table's source from the record after it. A
// persistent table without a stored stream has none (NoOffset), and
// Watermark creates none. It blocks, honours ctx and fails as
// IngestRecord does (errors are a *TableError).
func (w *Writer) Watermark(ctx context.Context, table string) (int64, error) {
	cfg, err := w.knownConfig(table)
	if err != nil {
		return zbstream.NoOffset, err
	}
	if !cfg.Ephemeral {
		e, _, err := w.store.Load(ctx, table)
		if err != nil {
			return zbstream.NoOffset, tableErr(table, err)
		}
		if e.StreamID == "" {
			return zbstream.NoOffset, nil // nothing was ever sent under a create that was not saved
		}
	}
	t, s, base, err := w.acquire(ctx, table)
	if err != nil {
		return zbstream.NoOffset, err
	}
	defer w.release(t)
	if d := s.LastDurable(); d != zbstream.NoOffset {
		return base + d, nil
	}
	return base - 1, nil
}
