package spool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zbstream/zbstream/internal/atomicfile"
)

const (
	metaFile    = "SPOOL"
	lockFile    = "LOCK"
	metaVersion = 1
)

// meta is the spool's header: what the log belongs to. It is written
// whole, to a temporary file that is synced and renamed over the old one,
// then the directory is synced (replaceFile).
type meta struct {
	Version    int    `json:"version"`
	Table      string `json:"table"`
	RecordType string `json:"record_type"` // "json", "proto" or "avro"
	Message    string `json:"message,omitempty"`
	Descriptor []byte `json:"descriptor,omitempty"`
	AvroSchema string `json:"avro_schema,omitempty"`
	// RequestID is the idempotency key of the stream's create, written
	// before the create so that a crash between the create and the next
	// write of the header gets the same stream back.
	RequestID string `json:"request_id"`
	// StreamID is empty until the create has answered.
	StreamID string `json:"stream_id,omitempty"`
	// Repair is set by Repair and cleared by the next Open, which
	// reconciles the log with the server (see repairRecord). A header
	// without it is the same bytes as before it existed.
	Repair *repairRecord `json:"repair,omitempty"`
}

// repairRecord says that Repair moved the log's entries from offset From
// on aside (into Files): the server may hold some of them, so the log may
// end below the server's watermark. The next Open then continues after
// the watermark instead of refusing it (*WatermarkError), so that a new
// call never gets an offset the server holds, and reports the offsets
// moved aside that the server does not hold (Stats.Lost).
type repairRecord struct {
	From int64 `json:"from"`
	// To is the last offset known to have been moved aside; unreadable
	// bytes after it may have held more, that the server may hold too.
	To    int64    `json:"to"`
	Files []string `json:"files"`
}

// metaEnvelope carries the header with a checksum of its JSON.
type metaEnvelope struct {
	Meta  json.RawMessage `json:"meta"`
	CRC32 uint32          `json:"crc32c"`
}

// readMeta reads the header of dir; ok is false if there is none.
func readMeta(dir string) (m meta, ok bool, err error) {
	path := filepath.Join(dir, metaFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("spool: reading the header: %w", err)
	}
	var env metaEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return m, false, &CorruptError{File: path, Reason: "header: " + err.Error()}
	}
	if crc32.Checksum(env.Meta, castagnoli) != env.CRC32 {
		return m, false, &CorruptError{File: path, Reason: "header checksum does not match"}
	}
	dec := json.NewDecoder(bytes.NewReader(env.Meta))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, false, &CorruptError{File: path, Reason: "header: " + err.Error()}
	}
	if m.Version != metaVersion {
		return m, false, &CorruptError{File: path, Reason: fmt.Sprintf("header version %d, this build reads %d", m.Version, metaVersion)}
	}
	return m, true, nil
}

// writeMeta replaces the header of dir atomically and durably.
func writeMeta(dir string, m meta) error {
	m.Version = metaVersion
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b, err := json.Marshal(metaEnvelope{Meta: body, CRC32: crc32.Checksum(body, castagnoli)})
	if err != nil {
		return err
	}
	return replaceFile(filepath.Join(dir, metaFile), append(b, '\n'))
}

// replaceFile replaces the file at path by data atomically and durably
// (see package atomicfile).
func replaceFile(path string, data []byte) error {
	return writeErr(atomicfile.WriteFile(path, data))
}

// syncDir makes the directory's entries (created, renamed, removed files)
// durable.
func syncDir(dir string) error {
	return writeErr(atomicfile.SyncDir(dir))
}

// writeErr makes an error of package atomicfile a *WriteError (nil stays
// nil): its step and file, and its cause.
func writeErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &WriteError{Op: pe.Op, File: pe.Path, Err: pe.Err}
	}
	return err
}
