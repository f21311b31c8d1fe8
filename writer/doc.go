// Package writer writes records into many tables through one
// [zbstream.Client], with a bounded number of streams open: the layer a
// change-data-capture sink, a router or a fan-out job needs, where records
// name their table and a stream is bound to one.
//
//	client, err := zbstream.NewClient(endpoint, zbstream.WithOAuth(workspaceURL, clientID, clientSecret))
//	defer client.Close()
//
//	store, err := writer.OpenFileStore("/var/lib/app/streams.json") // crash-safe: temp, fsync, rename, fsync dir
//	w, err := writer.New(client, writer.Config{MaxOpenStreams: 16, Store: store})
//
//	wm, err := w.Watermark(ctx, "main.shop.orders")          // replay the source after wm
//	off, err := w.IngestJSON(ctx, "main.shop.orders", order) // the record's offset in its table
//	err = w.Flush(ctx)                                       // every table durable: commit the source position
//	err = w.Close(ctx)
//
// # Streams
//
// A Writer opens a table's stream when the table is first written, and
// keeps at most Config.MaxOpenStreams open (DefaultMaxOpenStreams unless
// set): at the cap, the least recently used table's stream is flushed and
// closed, and opened again when its table is written again.
//
// A persistent table (the default) keeps one stream for life, and is
// exactly-once as one persistent stream is: the stream is created once,
// its id saved in the Writer's Store before anything is sent into it, and
// resumed by that id on every reopen, in this process or in the next. A
// reopen in the same Writer is checked as a reconnect is
// ([zbstream.WithHistory]), so that a stream another writer added to
// meanwhile fails the table instead of being written after records this
// Writer never sent. A FileStore keeps the ids in one file, replaced
// atomically and durably on every save, for a new process to resume every
// table's stream; a MemoryStore (the default) keeps them for the life of
// the process; any Store will do. An ephemeral table (TableConfig,
// through Config.Table) gets a new at-least-once stream on every open.
//
// # Offsets and restarts
//
// Offsets are per table. After a restart, Watermark says, for each
// persistent table, the highest offset the server holds: the program
// replays the table's source from the record after it. Flush makes every
// call accepted so far durable, in every table: the point at which a
// source position may be committed. Config.OnAck and Config.OnFail report
// every offset that becomes durable, or that is lost with its stream,
// naming its table.
//
// # Errors
//
// A table fails alone: its calls, Flush and Close return a *TableError
// naming it and wrapping the cause ([zbstream.ErrStreamFailed],
// [zbstream.ErrClosed], *[zbstream.LimitError], ...: errors.Is and
// errors.As see through it), while the other tables go on. The failure
// sticks until Reset, which returns the calls that did not land; Failed
// lists the failed tables, and Stats counts what the Writer has done.
//
// Every method of a Writer is safe for concurrent use.
package writer
