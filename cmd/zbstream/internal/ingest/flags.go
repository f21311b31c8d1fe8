package ingest

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/record"
)

const synopsis = `ingest -endpoint URL -table catalog.schema.table [flags] FILE
       ingest -endpoint URL -table-field FIELD [-max-open-streams N] [flags] FILE
       ingest -endpoint URL -table catalog.schema.table -format arrow|parquet [flags] FILE

Ingests FILE into a table exactly once, through a persistent stream (an
Arrow or Parquet file at least once, see -format below). FILE holds JSON
lines (one JSON object per non-empty line), or, with -proto-descriptor-set
and -proto-message, length-delimited protobuf records (each a varint
length, then the message). With -avro-schema FILE.avsc the
JSON lines are encoded as Avro datums of that record schema and sent on an
Avro stream; a line that does not fit the schema (a missing field without
a default, a field the schema lacks, a value of the wrong type) is refused
as an invalid record is.

With -table-schema the JSON lines are converted to proto records of the
table's Unity Catalog schema and sent on a proto stream, as the official
SDKs' JSON-to-proto path does (a column by its name, NOT NULL columns
required). The bare flag reads the schema from the workspace given with
-workspace-url (GET /api/2.1/unity-catalog/tables/TABLE, with the bearer
token of -token or $ZBSTREAM_TOKEN); -table-schema=FILE (with "=") reads
it from FILE, that API's answer saved as JSON, and needs no workspace. A
line that does not fit (a column the table lacks, a value of the wrong
type, null or nothing for a NOT NULL column) is refused, naming the
field, as an invalid record is. The state file pins the descriptor the
stream is created with: a rerun goes on with it and reads no schema.

With -format arrow, FILE is an Arrow IPC file, in the stream format or
the file format (told apart by the "ARROW1" magic); with -format parquet,
a Parquet file. Its rows go to -table in batches of -batch-size rows
(10000 unless given), at most -max-inflight batches (16 unless given) and
64 MiB unacknowledged, over an Arrow Flight stream whose schema is the
file's; a dictionary-encoded column is refused (exit 3), and so is a file
that is not of the format. The file is read a batch at a time, never
whole. The flags of JSON lines (-table-field, -max-open-streams,
-skip-invalid, -proto-descriptor-set, -proto-message, -avro-schema,
-table-schema, -workspace-url, -batch-bytes) are refused. An Arrow stream
is AT LEAST ONCE across a crash: it has no id to resume, so the state
file records the rows the server acknowledged as the acks arrive
("durable_rows"), and after Ctrl-C or a crash the same command skips them
and sends the rest on a new stream. Rows in flight when a run died (sent,
not yet acknowledged, or acknowledged after the last save) are sent again
and may land twice; rows recorded durable are never sent again, and a
finished file is not sent again. The run ends printing the rows it sent
and the process's peak RSS.

Flags may come before or after FILE.

Every record is checked, before anything is sent, with the server's own
rules (a JSON object in valid UTF-8, or a message that parses with the
descriptor and has no field unknown to it; at most the per-call limit in
size). A record that fails ends the run with FILE:LINE and exit code 3,
unless -skip-invalid names a dead-letter file: then such records are
written there, one JSON line each ({"line":N,"offset":BYTE,"reason":...,
"record":TEXT}, with "record_base64" instead of "record" for a record that
is not valid UTF-8 and for protobuf, and "index":N for a protobuf
record's number), and the others are ingested.

A state file (FILE.zbstate unless -state says otherwise) keeps the stream id
and how the file maps to offsets (the records set aside included). After
Ctrl-C or a crash, run the same command again: it resumes the stream and
continues after the records the server already holds, with no duplicate
and no gap. A finished file is not sent again. The file must not change
until it is done, with one exception: if the server refuses a call for
good, the error names its lines, and the records after those the server
holds may be corrected before running the same command again.

With -table-field instead of -table, each JSON line goes to the table
named by its top-level string field FIELD (the line is sent as it is,
FIELD included), through at most -max-open-streams streams at once: the
least recently used is flushed and closed when another table needs its
place, and resumed when its table comes again. Each table gets its own
persistent stream, and its records are grouped into calls in file order
as above; the state file keeps every table's stream and its part of the
file, so a rerun resumes each table after its own watermark. A line
without FIELD, or whose FIELD is not a string naming catalog.schema.table,
is refused before anything is sent (FILE:LINE), or set aside with
-skip-invalid. A table whose stream fails stops alone: the others go on,
the run exits 1 naming it, and a rerun continues it.

Exit codes: 0 done, 1 failure, 2 bad flags (a TLS mismatch with the server
included: an untrusted certificate, the wrong scheme), 3 unreadable or
malformed input (or a state file for another file, or records the server
refused), 4 server (or -table-schema's workspace) unreachable, 5
credentials or table refused (by the server, or by the workspace), 130
interrupted (run again to continue).

Flags:`

// Defaults of the ingest command.
const (
	defaultBatchRecords = 100
	defaultBatchBytes   = 4 << 20
	defaultMaxInflight  = 1000
	defaultMaxOpen      = 16
)

type flags struct {
	endpoint, token, table, appName, caFile string
	tableField                              string // routed: each record's table is this field
	maxOpen                                 int    // routed: streams open at once, at most
	tokenFrom                               string // "-token", "$ZBSTREAM_TOKEN" or "" (none)
	state, skipInvalid                      string
	descSet, message                        string
	avroSchema                              string          // -avro-schema: JSON lines sent as Avro datums
	tableSchema                             tableSchemaFlag // -table-schema: JSON lines sent as proto records of the table's schema
	workspaceURL                            string          // -workspace-url: where -table-schema reads the schema
	batchRecords, maxInflight               int
	batchBytes                              int64
	interval, closeTimeout                  time.Duration
	file                                    string
	batchSet                                bool   // -batch-size or -batch-bytes given
	format                                  string // -format: json, arrow or parquet
}

// flagSet defines the ingest flags on a new flag set; parsing it
// fills the flags returned (parseFlags then checks them).
func flagSet(stderr io.Writer) (*flag.FlagSet, *flags) {
	f := new(flags)
	fs := cli.NewFlags("ingest", synopsis, stderr)
	fs.StringVar(&f.endpoint, "endpoint", "", "server `URL`: https://host[:port], host:port (TLS) or http://host:port (plaintext)")
	fs.StringVar(&f.token, "token", "", "bearer `token` (default: $ZBSTREAM_TOKEN; none for a server in open mode)")
	fs.StringVar(&f.table, "table", "", "target `table`: catalog.schema.table")
	fs.StringVar(&f.format, "format", formatFlagJSON, "what FILE holds: json (JSON lines, or the records the flags below say), arrow (an Arrow IPC file, stream or file format) or parquet (a Parquet file)")
	fs.StringVar(&f.tableField, "table-field", "", "route each JSON line to the table named by its top-level string `field` (instead of -table)")
	fs.IntVar(&f.maxOpen, "max-open-streams", defaultMaxOpen, "with -table-field: streams open at once, at most `N`")
	fs.StringVar(&f.caFile, "ca-file", "", "trust the CA certificates in this PEM `file` instead of the system roots")
	fs.StringVar(&f.appName, "app-name", "zbstream-ingest", "application `name` in the user agent")
	fs.StringVar(&f.state, "state", "", "state `file` (default FILE.zbstate, beside FILE)")
	fs.StringVar(&f.skipInvalid, "skip-invalid", "", "write the records the server would refuse to this dead-letter `file` (JSON lines, rewritten whole) and ingest the others")
	fs.StringVar(&f.descSet, "proto-descriptor-set", "", "FileDescriptorSet `file` (protoc --descriptor_set_out --include_imports): FILE holds length-delimited protobuf records")
	fs.StringVar(&f.message, "proto-message", "", "full `name` of the records' message in the descriptor set, e.g. pkg.Event")
	fs.StringVar(&f.avroSchema, "avro-schema", "", "Avro record schema `file` (.avsc): each JSON line is encoded as a datum of it and sent on an Avro stream")
	fs.Var(&f.tableSchema, "table-schema", "send each JSON line as a proto record of the table's Unity Catalog schema, read from -workspace-url; -table-schema=FILE reads it from FILE instead (the tables API's answer saved as JSON)")
	fs.StringVar(&f.workspaceURL, "workspace-url", "", "with -table-schema: the Databricks workspace `URL` whose Unity Catalog holds the table, e.g. https://my-workspace.cloud.databricks.com")
	fs.IntVar(&f.batchRecords, "batch-size", defaultBatchRecords, fmt.Sprintf("records per call; with -format arrow or parquet, rows per batch, %d unless given (fixed in the state file when the ingestion starts)", defaultArrowBatchRows))
	cli.ByteSizeVar(fs, &f.batchBytes, "batch-bytes", defaultBatchBytes, "at most this many `bytes` per call, as sent (e.g. 4MiB; "+cli.SizeUnits+"; fixed in the state file when the ingestion starts)")
	fs.IntVar(&f.maxInflight, "max-inflight", defaultMaxInflight, fmt.Sprintf("calls sent and not yet acknowledged, at most; with -format arrow or parquet, batches, %d unless given (and %d MiB)", defaultArrowInflight, arrowInflightBytes>>20))
	fs.DurationVar(&f.interval, "progress", 2*time.Second, "`interval` of progress lines when stderr is not a terminal; on a terminal a bar is redrawn (0: no progress at all)")
	fs.DurationVar(&f.closeTimeout, "close-timeout", 10*time.Second, "on Ctrl-C or a failure, how long to wait for what was sent to become durable")
	return fs, f
}

func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	fs, f := flagSet(stderr)
	pos, err := cli.ParseAnywhere(fs, args)
	if err != nil {
		return nil, err
	}
	if f.token != "" {
		f.tokenFrom = "-token"
	} else if f.token = os.Getenv(cli.EnvToken); f.token != "" {
		f.tokenFrom = "$" + cli.EnvToken
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "batch-size" || fl.Name == "batch-bytes" {
			f.batchSet = true
		}
	})
	if err := f.checkFormat(fs); err != nil {
		fs.Usage()
		return nil, err
	}
	switch {
	case len(pos) != 1:
		fs.Usage()
		if len(pos) == 0 {
			return nil, cli.UsageErr("ingest takes one FILE, got none")
		}
		if f.tableSchema.fetch() {
			return nil, cli.UsageErr("ingest takes one FILE, got %s: %q (to read the table's schema from a file, write -table-schema=FILE, with \"=\")", plural(int64(len(pos)), "argument"), pos)
		}
		return nil, cli.UsageErr("ingest takes one FILE, got %s: %q", plural(int64(len(pos)), "argument"), pos)
	case f.endpoint == "":
		return nil, cli.UsageErr("-endpoint is required")
	case f.table == "" && f.tableField == "":
		return nil, cli.UsageErr("-table is required (or -table-field, to route each record by a field of its own)")
	case f.table != "" && f.tableField != "":
		return nil, cli.UsageErr("-table and -table-field exclude each other: one table for every record, or each record's own")
	case f.tableField != "" && f.descSet != "":
		return nil, cli.UsageErr("-table-field takes JSON lines, not protobuf records")
	case f.maxOpen <= 0:
		return nil, cli.UsageErr("-max-open-streams must be positive")
	case f.avroSchema != "" && f.descSet != "":
		return nil, cli.UsageErr("-avro-schema and -proto-descriptor-set exclude each other: FILE holds JSON lines for Avro, or protobuf records")
	case f.avroSchema != "" && f.tableField != "":
		return nil, cli.UsageErr("-avro-schema takes one table (-table): one writer schema for one table's records")
	case f.tableSchema.on && (f.descSet != "" || f.message != ""):
		return nil, cli.UsageErr("-table-schema and -proto-descriptor-set/-proto-message exclude each other: -table-schema makes the proto message from the table's schema, and FILE holds JSON lines")
	case f.tableSchema.on && f.avroSchema != "":
		return nil, cli.UsageErr("-table-schema and -avro-schema exclude each other: the JSON lines go as proto records of the table's schema, or as Avro datums")
	case f.tableSchema.on && f.tableField != "":
		return nil, cli.UsageErr("-table-schema takes one table (-table): its schema is that table's")
	case f.tableSchema.fetch() && f.workspaceURL == "":
		return nil, cli.UsageErr("-table-schema reads the table's schema from a workspace: give -workspace-url, or -table-schema=FILE to read it from a file")
	case f.tableSchema.fetch() && f.token == "":
		return nil, cli.UsageErr("-table-schema reads the table's schema with a bearer token: pass -token, or set $%s", cli.EnvToken)
	case f.workspaceURL != "" && !f.tableSchema.fetch():
		return nil, cli.UsageErr("-workspace-url is where -table-schema (without =FILE) reads the table's schema, and nothing else uses it")
	case (f.descSet == "") != (f.message == ""):
		return nil, cli.UsageErr("-proto-descriptor-set and -proto-message go together")
	case f.batchRecords <= 0:
		return nil, cli.UsageErr("-batch-size must be positive")
	case f.batchBytes <= 0 || f.batchBytes > core.DefaultMaxCallBytes:
		return nil, cli.UsageErr("-batch-bytes must be between 1 and %d, the per-call limit", core.DefaultMaxCallBytes)
	case f.maxInflight <= 0:
		return nil, cli.UsageErr("-max-inflight must be positive")
	case f.closeTimeout <= 0:
		return nil, cli.UsageErr("-close-timeout must be positive")
	case f.interval < 0:
		return nil, cli.UsageErr("-progress must not be negative (0 turns progress off)")
	}
	if f.table != "" {
		if err := record.CheckTable(f.table); err != nil {
			return nil, cli.UsageErr("-table: %v", err)
		}
	}
	f.file = pos[0]
	if f.state == "" {
		f.state = f.file + ".zbstate"
	}
	if f.skipInvalid != "" {
		// The dead-letter file is replaced whole: never by the input or
		// the state file.
		for _, other := range []struct{ name, path string }{{"FILE", f.file}, {"the state file", f.state}} {
			if samePath(f.skipInvalid, other.path) {
				return nil, cli.UsageErr("-skip-invalid %s is %s: give the dead-letter file a path of its own", f.skipInvalid, other.name)
			}
		}
	}
	return f, nil
}

// samePath reports whether a and b name the same file: the same
// absolute path, or the same existing file.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == ab {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// clientErr is clientErr with the hints of this command's flags: where
// the token comes from when the server refuses it, the table when the
// token may not write it.
func (f *flags) clientErr(err error) error {
	var ce *zbstream.ConnectionError
	if errors.As(err, &ce) {
		switch {
		case ce.Code == core.CodeUnauthenticated && f.tokenFrom == "":
			err = core.Errorf("%w (no token was given: pass -token, or set $%s)", err, cli.EnvToken)
		case ce.Code == core.CodeUnauthenticated:
			err = core.Errorf("%w (the token from %s was refused: check it, or pass another with -token)", err, f.tokenFrom)
		case ce.Code == core.CodePermissionDenied && f.tokenFrom != "" && f.table == "":
			err = core.Errorf("%w (the token from %s may not write this table: check the records' -table-field, or the token's grants)", err, f.tokenFrom)
		case ce.Code == core.CodePermissionDenied && f.tokenFrom != "":
			err = core.Errorf("%w (the token from %s may not write table %s: check -table, or the token's grants)", err, f.tokenFrom, f.table)
		}
	}
	return cli.ClientErr(err, "-ca-file")
}
