// Package spool makes a persistent stream exactly-once across the death of
// the process without replaying the source: every ingest call is written to
// a local write-ahead log and synced before it returns, and a new process
// reopens the log, resumes the stream and sends whatever the server does
// not have yet.
//
// Use it when the source cannot be replayed from the stream's watermark:
// an HTTP handler whose caller already got its answer, a message consumed
// from a queue, a sensor reading. When the source can be replayed, a plain
// persistent stream is cheaper (see the root package's doc).
//
//	sp, err := spool.Open(ctx, client, spool.Options{Dir: "/var/lib/app/spool", Table: "main.sales.orders"})
//	off, err := sp.IngestRecord(ctx, record) // synced to the log: lands exactly once
//	err = sp.Close(ctx)                      // durable on the server, or kept for the next Open
//
// # Contract
//
// A call that returned an offset lands exactly once, at that offset,
// whatever happens to the process afterwards (SIGKILL, a crash, a power
// loss of the process's machine if the disk honours fsync), provided the
// spool's directory is opened again. A call that did not return (the
// process died first, or it returned an error) lands at most once, and at
// most once more if the application retries it.
//
// # How it works
//
// Calls are queued to one committer goroutine. It takes every queued call
// (a group), gives them the log's next offsets, writes their entries with
// one write(2) and one fsync (group commit: concurrent calls share the
// sync), and only then hands each entry to the stream, in log order, and
// returns it to its caller. Nothing reaches the stream before its entry is
// synced, so the server never holds an offset the log lacks, and with one
// writer the stream assigns the same offsets as the log: the spool checks
// that it does and fails with ErrOffsetMismatch if not.
//
// Open takes an exclusive flock on the directory (a second process gets
// ErrLocked), checks the header against the options (table, record type,
// message and descriptor: a *MismatchError), reads the last segment,
// cuts a torn tail (an entry cut short or whose CRC-32C does not match: a
// write the crash interrupted, whose call never returned) and syncs the
// segment, then resumes the stream by the id in the header. With the
// server's watermark W it removes the segments at or below W, hands every
// entry above W to the stream again under its offset, and new calls
// continue after the log's last entry. A W above the log's last offset (a
// spool that is not this stream's history, such as an older copy of the
// directory) or below its first retained entry is a *WatermarkError, and
// nothing is sent.
//
// A new spool writes its header (with a fresh idempotency key) before it
// creates the stream with that key, and writes the stream id after: a
// crash in between gets the same stream back.
//
// Segments whose entries are all durable on the server are removed. The
// log's size is bounded by Options.MaxBytes: a call that does not fit
// waits (honouring its context) until the server has made entries durable,
// never dropping anything. A failed write (a full disk) is cut back and
// fails only its calls; a failed fsync fails the spool, since the kernel
// may have dropped the unsynced pages, and the next Open recovers.
//
// # Files
//
// The directory holds LOCK (the flock), SPOOL (the header: JSON with a
// CRC-32C, replaced by write, fsync, rename, fsync of the directory) and
// the segments, NNNNNNNNNNNNNNNNNNNN.seg, named by the offset of their
// first entry. A segment is a sequence of entries:
//
//	length uint32 LE | crc32c uint32 LE (of length and body) | body
//	body: offset int64 LE | kind byte (1 record, 2 batch) | uvarint count | count × (uvarint len, bytes)
//
// A new segment is started when the active one exceeds
// Options.SegmentBytes; its name is made durable (the directory synced)
// before anything is written to it. The last segment is never removed: its
// name and entries say where the log ends, even when everything is
// durable.
//
// # Limits
//
// The directory must be on a local file system whose fsync and flock work
// (not a network file system). Removing a durable segment is not synced:
// a segment a power loss brings back is at or below the watermark and is
// removed again by the next Open. A record that passes the spool's checks
// (see IngestRecord) and that the server still refuses fails the stream
// with a non-retryable error, and its entry stays in the log, to be sent
// (and refused) by every Open: inspect the spool and remove it by hand.
//
// # Cost
//
// One fsync per group of concurrent calls, plus the copy of the records
// into the log. With one goroutine making single-record calls, every call
// waits for its own fsync; with many goroutines or batches the sync is
// shared. See the package's benchmarks (BenchmarkSpool) and the README.
package spool
