package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// arrowState is the state file of an Arrow or Parquet ingestion. An Arrow
// Flight stream has no id that outlives its connection and no watermark
// to ask a server for (docs/protocol.md §12), so the state file itself
// keeps how far the file is durable: DurableRows, the rows from the
// file's start that the server acknowledged, in file order, updated as
// acks arrive. A rerun skips them and sends the rest into a new stream.
//
// That is at least once across a crash, not exactly once: rows sent but
// not yet acknowledged when the process died, or acknowledged after the
// last save, are sent again. Rows recorded durable are never sent again.
//
// The file is pinned by its size and SHA-256, as for JSON lines, and so
// are the format and the batch size: what DurableRows counts depends on
// nothing else. It is written whole and atomically (saveStateFile): once
// before anything is sent, then each time more rows are durable (as
// often as the disk takes it: a save writes the newest count), and when
// the file is done.
type arrowState struct {
	Version int `json:"version"`

	// The input: its path when the state was made (informative), its
	// identity, its format (formatArrowIPC or formatParquet) and rows.
	File   string `json:"file"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Format string `json:"format"`
	Rows   int64  `json:"rows"`

	// BatchRows is the rows of every batch sent (-batch-size), the last
	// one fewer.
	BatchRows int `json:"batch_rows"`
	// DurableRows is how many of the file's first rows the server holds.
	DurableRows int64 `json:"durable_rows"`

	Endpoint string `json:"endpoint"` // informative
	Table    string `json:"table"`

	Created  time.Time `json:"created"`
	Done     bool      `json:"done,omitempty"`
	Finished time.Time `json:"finished,omitzero"`
}

// isArrowFormat reports whether a state file's format is a columnar one.
func isArrowFormat(format string) bool { return format == formatArrowIPC || format == formatParquet }

// formatFlagOf is the -format value of a state file's format.
func formatFlagOf(format string) string {
	switch format {
	case formatArrowIPC:
		return "arrow"
	case formatParquet:
		return "parquet"
	}
	return "json"
}

// loadArrowState reads the state file of an Arrow or Parquet ingestion;
// a missing one is (nil, nil). One made for JSON lines is a usage error.
func loadArrowState(path string) (*arrowState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, inputErr("state file: %v", err)
	}
	if f := stateFormat(b); f != "" && !isArrowFormat(f) {
		return nil, cli.UsageErr("state file %s was made for %s input (-format json): give the same flags to continue, or a new -state", path, f)
	}
	var st arrowState
	if err := decodeStrict(b, &st); err != nil {
		return nil, inputErr("state file %s is unreadable (%v); if it is damaged, delete it: the next run sends the whole file again", path, err)
	}
	switch {
	case st.Version != stateVersion:
		return nil, inputErr("state file %s has version %d; this zbstream reads version %d", path, st.Version, stateVersion)
	case st.SHA256 == "" || st.Table == "" || st.BatchRows <= 0 || st.Rows <= 0 || st.DurableRows < 0 || st.DurableRows > st.Rows:
		return nil, inputErr("state file %s is incomplete or inconsistent (a field is missing, or %d of %d rows durable)", path, st.DurableRows, st.Rows)
	}
	return &st, nil
}

// save writes the state file (see arrowState).
func (st *arrowState) save(path string) error { return saveStateFile(path, st) }

// matchesFlags refuses a state file made for another table or format: a
// usage error, since the flags differ from the state's.
func (st *arrowState) matchesFlags(path, format, table string) error {
	switch {
	case st.Table != table:
		return cli.UsageErr("state file %s belongs to table %s, not %s: give the same -table to continue, or a new -state", path, st.Table, table)
	case st.Format != format:
		return cli.UsageErr("state file %s was made for %s input (-format %s), not %s: give the same -format to continue, or a new -state",
			path, st.Format, formatFlagOf(st.Format), format)
	}
	return nil
}

// matchesFile refuses a state file made for another content than the
// file's: an input error, as for JSON lines.
func (st *arrowState) matchesFile(path, file string, size int64, sha string) error {
	if st.Size != size || st.SHA256 != sha {
		return inputErr("%s", otherFile(path, st.File, st.Size, st.SHA256, file, size, sha))
	}
	return nil
}

// hashFile returns a file's size and SHA-256 (hex): its identity.
func hashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", inputErr("%v", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", inputErr("%s: %v", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
