package ingest

import (
	"flag"
	"slices"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// The values of -format.
const (
	formatFlagJSON    = "json"
	formatFlagArrow   = "arrow"
	formatFlagParquet = "parquet"
)

// defaultArrowBatchRows is -batch-size with -format arrow or parquet when
// none is given: rows are small and an Arrow batch costs little per row
// only when it has many (a frame holds up to 2 MiB; bigger batches are
// split into frames by the stream).
const defaultArrowBatchRows = 10_000

// The Arrow path's window: batches sent and not yet acknowledged, at
// most (-max-inflight, when none is given), and their encoded bytes. The
// stream keeps a batch's frames until it is durable, so these bound the
// run's memory: 16 batches of 10,000 rows keep a loopback server busy
// (more raise the peak RSS, not the rate: docs/benchmarks.md).
const (
	defaultArrowInflight = 16
	arrowInflightBytes   = 64 << 20
)

// arrowRefused are the flags of JSON-lines ingestion that mean nothing
// for a columnar file, which holds its own schema and goes to one table
// as it is.
var arrowRefused = []string{
	"table-field", "max-open-streams", "skip-invalid",
	"proto-descriptor-set", "proto-message", "avro-schema",
	"table-schema", "workspace-url", "batch-bytes",
}

// checkFormat checks -format and, for arrow and parquet, refuses the
// flags given that only JSON lines take; it sets the Arrow defaults of
// -batch-size and -max-inflight.
func (f *flags) checkFormat(fs *flag.FlagSet) error {
	switch f.format {
	case formatFlagJSON:
		return nil
	case formatFlagArrow, formatFlagParquet:
	default:
		return cli.UsageErr("-format %q: want json, arrow or parquet", f.format)
	}
	var given []string
	batchSize, inflight := false, false
	fs.Visit(func(fl *flag.Flag) {
		if slices.Contains(arrowRefused, fl.Name) {
			given = append(given, "-"+fl.Name)
		}
		batchSize = batchSize || fl.Name == "batch-size"
		inflight = inflight || fl.Name == "max-inflight"
	})
	if len(given) > 0 {
		return cli.UsageErr("-format %s does not take %s: an Arrow or Parquet file brings its own schema and goes to one -table as it is (these flags are for JSON lines)",
			f.format, joinFlags(given))
	}
	if !batchSize {
		f.batchRecords = defaultArrowBatchRows
	}
	if !inflight {
		f.maxInflight = defaultArrowInflight
	}
	return nil
}

// joinFlags lists flag names: "-a", "-a and -b", "-a, -b and -c".
func joinFlags(names []string) string {
	switch len(names) {
	case 1:
		return names[0]
	case 2:
		return names[0] + " and " + names[1]
	}
	out := ""
	for i, n := range names[:len(names)-1] {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out + " and " + names[len(names)-1]
}

// arrowFormat is the state file's name of the -format given.
func (f *flags) arrowFormat() string {
	if f.format == formatFlagParquet {
		return formatParquet
	}
	return formatArrowIPC
}
