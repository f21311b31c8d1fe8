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
// message and descriptor: a *MismatchError), reads every segment without
// changing anything, refuses damage that is not a torn tail (a
// *CorruptError, see Damage below), cuts a torn tail of the last segment
// (damage confined to its last group commit: a write the crash
// interrupted, whose calls never returned) and syncs the segment, then
// resumes the stream by the id in the header. With the
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
//	body: offset int64 LE | kind byte | [uvarint group] | uvarint count | count × (uvarint len, bytes)
//	kind: 1 record, 2 batch, plus 0x80 when the group field follows
//	group: offset minus the offset of the first entry of its group commit
//
// A group commit is the entries one write and one fsync wrote: the calls
// the committer took together. Every entry records its group's first
// offset, and a group never spans two segments. Logs written before
// groups were recorded (kind 1 or 2 without 0x80) stay readable, and a new
// process appends grouped entries after them.
//
// A new segment is started when the active one exceeds
// Options.SegmentBytes; its name is made durable (the directory synced)
// before anything is written to it. The last segment is never removed: its
// name and entries say where the log ends, even when everything is
// durable.
//
// # Damage
//
// A crash can damage only the last group commit of the last segment: its
// fsync had not returned, so none of its calls had, and the kernel may
// have written any part of it, in any order, with garbage of any length
// after it. Everything before it was synced. So Open reads each segment's
// valid prefix, and when bytes follow it (an entry cut short, a length out
// of range, a CRC that does not match), it scans them at every byte
// position for intact entries. An intact entry of a LATER group than the
// damaged entry's (its group starts after the damaged offset) proves that
// the damaged entry had been synced: that is corruption, not a torn write.
// Damage after which no such entry is found is a torn tail, and cut. An
// old-format entry (no group) above the damaged offset counts as such a
// proof: a torn old-format group may be refused, which costs a repair but
// never a synced entry. Any damage in a sealed segment (one before the
// last, synced whole), a gap between segments, or an entry whose CRC
// matches and whose content is wrong, is corruption too. What cannot be
// told apart: damage that spares no intact entry after it looks like a
// torn tail, and is cut.
//
// On corruption Open returns a *CorruptError naming the segment, the
// byte position and the offsets at stake (from the damaged entry to the
// log's end), changes nothing on disk and sends nothing. The operator
// runs Check (zbstream spool check DIR) to see the damage, then Repair
// (zbstream spool repair DIR), which moves the damaged segment aside as
// NAME.damaged (its bytes kept), keeps its intact entries before the
// damage, and moves every later segment aside too: an entry after a
// missing offset can no longer land at its own offset, unless the server
// already holds the missing ones, which Repair cannot know offline. It
// reports the offsets at stake and records them in the header. The next
// Open reconciles with the server's watermark W: if W is above what the
// log keeps, it continues after W (never giving a new call an offset the
// server holds), else it sends the kept entries above W; the offsets moved
// aside that the server does not hold are lost, reported in Stats.Lost,
// and given to new calls again (a stream's offsets are dense). Then the
// record is cleared. A binary from before the record existed refuses a
// header that holds one.
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
// shared. See the package's benchmarks (BenchmarkSpool) and docs/benchmarks.md, "The spool".
package spool
