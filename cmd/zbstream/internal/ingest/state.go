package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/internal/atomicfile"
)

// stateVersion is the version of the state file's format.
const stateVersion = 1

// state is the state file of one ingestion: which stream, which
// table, which file, and how the file maps to offsets.
//
// The mapping is a pure function of the file's content, the two batch
// limits and the cuts (see batcher): offset k is call k. The state
// file pins them all
// (the content by its size and SHA-256), so it never changes while records
// flow; after a crash the server's watermark W alone says where to go on:
// with call W+1. The file is written whole and atomically (a temporary
// file, fsync, rename, fsync of the directory, see package atomicfile)
// three times in a run that meets no refusal:
//
//  1. before the stream is created, with the create's idempotency key
//     (ClientRequestID) and no stream id: a crash after the create and
//     before step 2 re-creates with the same key, which returns the same
//     stream, still empty (nothing is sent before step 2);
//  2. once the stream exists, with its id: from here on a run resumes it;
//  3. when every call is durable and the stream closed, marked done: a
//     later run sends nothing. A crash before this step costs a resume that
//     finds the watermark at the last call and sends nothing either.
//
// Two events rewrite it in between, with no call in flight: the server
// refusing a call for good (it records Pin and a cut, see pin), and
// a rerun accepting a file corrected after the pin (it records the new
// content's identity and mapping).
type state struct {
	Version int `json:"version"`

	// The input: its path when the state was made (informative), its
	// identity (size and SHA-256 of the whole content), its format and
	// what it holds.
	File         string `json:"file"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	Format       string `json:"format"`
	ProtoMessage string `json:"proto_message,omitempty"`
	// AvroSchemaSHA256 pins the -avro-schema file (its bytes): the calls
	// the server holds are datums of that schema.
	AvroSchemaSHA256 string `json:"avro_schema_sha256,omitempty"`
	// TableDescriptor pins the -table-schema descriptor (serialized, in
	// base64): the stream was created with it and holds records of it,
	// so a rerun goes on with it rather than read the table's schema
	// again, which may have changed since.
	TableDescriptor []byte `json:"table_descriptor,omitempty"`
	Records         int64  `json:"records"`

	// The mapping: call k (offset k) is the k-th group of at most
	// BatchRecords records and BatchBytes bytes as sent; Batches calls in
	// all.
	BatchRecords int   `json:"batch_records"`
	BatchBytes   int64 `json:"batch_bytes"`
	Batches      int64 `json:"batches"`

	// The records set aside (-skip-invalid), which the server would
	// refuse: their lines (JSON lines) or numbers from 1 (protobuf), in
	// file order, and the dead-letter file they went to. They are never
	// sent and take no offset: the mapping is made of the other records,
	// so it depends on the content alone, and a rerun sets aside the same
	// records again without writing them twice.
	DeadLetters string  `json:"dead_letters,omitempty"`
	Skipped     []int64 `json:"skipped,omitempty"`

	// Where the server refused a call for good (see pin): calls
	// also end after these numbers of records, and Pin is the part of the
	// file the server holds.
	Cuts []int64 `json:"cuts,omitempty"`
	Pin  *pin    `json:"pin,omitempty"`

	// Routed ingestion (-table-field): each record goes to the table its
	// top-level string field TableField names, and Table,
	// ClientRequestID and StreamID are empty. Tables maps every table to
	// its stream and its part of the file: call k of a table (offset k of
	// its stream) is the k-th group of that table's records, in file
	// order, grouped by the two batch limits (no cuts).
	TableField string                 `json:"table_field,omitempty"`
	Tables     map[string]*tableState `json:"tables,omitempty"`

	// The stream.
	Endpoint        string `json:"endpoint"` // informative
	Table           string `json:"table"`
	ClientRequestID string `json:"client_request_id"`
	StreamID        string `json:"stream_id,omitempty"`

	Created  time.Time `json:"created"`
	Done     bool      `json:"done,omitempty"`
	Finished time.Time `json:"finished,omitzero"`
}

// loadState reads a state file; a missing one is (nil, nil).
func loadState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, inputErr("state file: %v", err)
	}
	if f := stateFormat(b); isArrowFormat(f) {
		return nil, cli.UsageErr("state file %s was made for %s input (-format %s): give the same -format to continue, or a new -state", path, f, formatFlagOf(f))
	}
	var st state
	if err := decodeStrict(b, &st); err != nil {
		return nil, inputErr("state file %s is unreadable (%v); if it is damaged, delete it only if the stream it names received nothing, or records will be sent twice", path, err)
	}
	switch {
	case st.Version != stateVersion:
		return nil, inputErr("state file %s has version %d; this zbstream reads version %d", path, st.Version, stateVersion)
	case st.BatchRecords <= 0 || st.BatchBytes <= 0 || st.SHA256 == "",
		st.TableField == "" && (st.ClientRequestID == "" || st.Table == ""),
		st.TableField != "" && (len(st.Tables) == 0 || st.Table != "" || st.StreamID != ""),
		st.Format == formatTableProto && len(st.TableDescriptor) == 0:
		return nil, inputErr("state file %s is incomplete (a field is missing)", path)
	}
	for table, ts := range st.Tables {
		if ts == nil || ts.ClientRequestID == "" || ts.Batches <= 0 {
			return nil, inputErr("state file %s is incomplete (table %s)", path, table)
		}
	}
	return &st, nil
}

// save writes the state file whole and atomically (see package
// atomicfile): a crash leaves the old file or the new one, never a mix,
// and once save returns the new one survives a power loss. Rewriting it
// whole is what keeps a rerun from ever duplicating its content.
func (st *state) save(path string) error { return saveStateFile(path, st) }

// saveStateFile writes v, a state file's content, as indented JSON to
// path, whole and atomically (see state.save).
func saveStateFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("state file %s: %w", path, err)
	}
	return nil
}

// decodeStrict decodes a state file's content into v, refusing a field
// v does not have: a state file of another version or kind, or edited.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// stateFormat returns the input format a state file's content names, ""
// when it names none or is not JSON: the first thing to compare, so that
// a state file of the other family of formats (JSON lines or Arrow) is
// refused as made for another format rather than as unreadable.
func stateFormat(b []byte) string {
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(b, &head) != nil {
		return ""
	}
	return head.Format
}

// otherFile is the message of a state file made for another content
// than the file's: a file must not change while it is ingested.
func otherFile(path, stFile string, stSize int64, stSHA256, file string, size int64, sha string) string {
	return fmt.Sprintf("state file %s belongs to another file: it was made for %s of %d bytes (sha256 %.12s...), and %s has %d bytes (sha256 %.12s...); "+
		"a file must not change while it is ingested: restore it, or give a new -state for a new file",
		path, stFile, stSize, stSHA256, file, size, sha)
}

// tableState is one table of a routed ingestion: its records and
// calls in the file, and its stream (StreamID empty until it is created;
// ClientRequestID, made when the state file is, is the create's
// idempotency key).
type tableState struct {
	Records         int64  `json:"records"`
	Batches         int64  `json:"batches"`
	ClientRequestID string `json:"client_request_id"`
	StreamID        string `json:"stream_id,omitempty"`
}

// matchesFlags refuses a state file made for another table, format or
// message: a usage error, since the flags differ from the state's.
func (st *state) matchesFlags(path string, src source, table string) error {
	switch {
	case st.TableField != "" && table != "":
		return cli.UsageErr("state file %s routes records by their field %q: give -table-field %s to continue, or a new -state", path, st.TableField, st.TableField)
	case st.Table != table:
		return cli.UsageErr("state file %s belongs to table %s, not %s: give the same -table to continue, or a new -state", path, st.Table, table)
	case st.Format != src.format:
		return cli.UsageErr("state file %s was made for %s input, not %s", path, st.Format, src.format)
	case src.format == formatProto && st.ProtoMessage != string(src.md.FullName()):
		return cli.UsageErr("state file %s was made for messages %s, not %s", path, st.ProtoMessage, src.md.FullName())
	case src.format == formatAvro && st.AvroSchemaSHA256 != src.avro.sha256:
		return cli.UsageErr("state file %s was made with another Avro schema than %s (SHA-256 %.12s, not %.12s): give the same -avro-schema to continue, or a new -state", path, src.avro.path, st.AvroSchemaSHA256, src.avro.sha256)
	}
	return nil
}

// matchesFile refuses a state file made for another file (another
// content): an input error. A content that changed after the part pinned
// when the server refused a call is accepted (changed is true): see
// pin.
func (st *state) matchesFile(path string, src source, info fileInfo, skipped []int64) (changed bool, err error) {
	if st.Size != info.size || st.SHA256 != info.sha256 {
		if st.Pin != nil && !st.Done {
			sum, err := src.prefixSHA256(st.Pin.Bytes)
			if err == nil && sum == st.Pin.SHA256 {
				return true, nil
			}
		}
		msg := otherFile(path, st.File, st.Size, st.SHA256, src.path, info.size, info.sha256)
		if st.Pin != nil && !st.Done {
			msg += fmt.Sprintf(" (after the server refused a call, the file may change, but only after %s, the last record the server holds)", src.describe(st.Pin.Last, st.Pin.Last))
		}
		return false, inputErr("%s", msg)
	}
	switch {
	case st.Records != info.records || st.Batches != info.batches:
		return false, inputErr("state file %s: %s now reads as %s in %s, not %d in %d", path, src.path,
			plural(info.records, "record"), plural(info.batches, "call"), st.Records, st.Batches)
	case !slices.Equal(st.Skipped, skipped):
		return false, inputErr("state file %s sets aside %s of %s, but this zbstream would refuse %d: its record checks differ from those of the zbstream that made the state file",
			path, plural(int64(len(st.Skipped)), "record"), src.path, len(skipped))
	}
	return false, nil
}
