package ingest

// -table-schema: JSON lines sent as proto records of a Unity Catalog
// table's schema. The flag's value, where the schema comes from (the
// workspace, a file, or the state file of a run under way), and the
// conversion of a line, which the scan makes before anything is sent.

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/record"
)

// tableSchemaFlag is -table-schema's value. One flag says both that the
// lines go as proto records of the table's schema and where that schema
// comes from: alone (a boolean flag, so that the common case needs no
// value) it is read from the workspace; -table-schema=FILE reads a saved
// answer of the tables API instead, for a run without access to the
// workspace or with a schema kept beside the data.
type tableSchemaFlag struct {
	on   bool
	file string // "" with on: read from the workspace
}

// String is the flag's value as it would be given.
func (v *tableSchemaFlag) String() string {
	switch {
	case v == nil || !v.on:
		return ""
	case v.file == "":
		return "true"
	}
	return v.file
}

// Set takes "true" (the bare flag: read from the workspace), "false"
// (off), or a file's path.
func (v *tableSchemaFlag) Set(s string) error {
	switch s {
	case "true":
		*v = tableSchemaFlag{on: true}
	case "false":
		*v = tableSchemaFlag{}
	case "":
		return errors.New("-table-schema=FILE needs a file; the bare -table-schema reads the schema from -workspace-url")
	default:
		*v = tableSchemaFlag{on: true, file: s}
	}
	return nil
}

// IsBoolFlag lets -table-schema stand alone.
func (v *tableSchemaFlag) IsBoolFlag() bool { return true }

// fetch reports whether the schema is read from the workspace.
func (v *tableSchemaFlag) fetch() bool { return v.on && v.file == "" }

// tableCodec turns JSON lines into proto records of a table's message
// (record.JSONToProto), so that a line that does not fit is refused with
// its field before anything is sent.
type tableCodec struct {
	desc *descriptorpb.DescriptorProto // the stream is created with it
	raw  []byte                        // desc serialized: pinned in the state file
	md   protoreflect.MessageDescriptor
}

// newTableCodec reads a serialized DescriptorProto as the server does
// (record.MessageDescriptor).
func newTableCodec(raw []byte) (*tableCodec, error) {
	desc := new(descriptorpb.DescriptorProto)
	if err := proto.Unmarshal(raw, desc); err != nil {
		return nil, err
	}
	md, err := record.MessageDescriptor(raw)
	if err != nil {
		return nil, err
	}
	return &tableCodec{desc: desc, raw: raw, md: md}, nil
}

// codecOf is the codec of desc, as a table's schema made it.
func codecOf(desc *descriptorpb.DescriptorProto) (*tableCodec, error) {
	// Deterministic, so that the bytes pinned are the same for the same
	// schema from one run to the next.
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(desc)
	if err != nil {
		return nil, err
	}
	return newTableCodec(raw)
}

// encode converts a JSON line (already checked to be one JSON object) into
// a record, or says why it does not fit the table's schema.
func (c *tableCodec) encode(line []byte) ([]byte, string) {
	rec, err := record.JSONToProto(c.md, line)
	if err != nil {
		// The error begins "JSON record: ", which the line's place says.
		return nil, "does not fit the table's schema: " + strings.TrimPrefix(err.Error(), "JSON record: ")
	}
	return rec, ""
}

// loadTableSchema returns the codec of the run's table: the descriptor
// pinned in the state file when there is one (the stream holds records
// of it, whatever the table's schema has become since), else the schema
// read from -table-schema=FILE or from the workspace.
func loadTableSchema(ctx context.Context, f *flags, client *zbstream.Client, pinned []byte) (*tableCodec, error) {
	if pinned != nil {
		c, err := newTableCodec(pinned)
		if err != nil {
			return nil, inputErr("state file %s: its table descriptor is damaged: %v", f.state, err)
		}
		return c, nil
	}
	if f.tableSchema.file != "" {
		return readTableSchema(f.tableSchema.file, f.table)
	}
	desc, err := client.TableDescriptor(ctx, f.table)
	if err != nil {
		return nil, f.tableFetchErr(ctx, err)
	}
	c, err := codecOf(desc)
	if err != nil {
		return nil, cli.WithCode(cli.ExitFailure, core.Errorf("-table-schema: table %s: %w", f.table, err))
	}
	return c, nil
}

// readTableSchema reads a saved answer of the tables API, which must be
// table's if it names a table.
func readTableSchema(path, table string) (*tableCodec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, inputErr("-table-schema: %v", err)
	}
	ts, err := record.ParseTableSchema(b)
	if err != nil {
		return nil, inputErr("-table-schema=%s: %v", path, err)
	}
	// Unity Catalog's names are case-insensitive.
	switch short := table[strings.LastIndexByte(table, '.')+1:]; {
	case ts.FullName != "" && !strings.EqualFold(ts.FullName, table):
		return nil, cli.UsageErr("-table-schema=%s is the schema of table %s, not of -table %s", path, ts.FullName, table)
	case ts.FullName == "" && ts.Name != "" && !strings.EqualFold(ts.Name, short):
		return nil, cli.UsageErr("-table-schema=%s is the schema of a table named %s, not of -table %s", path, ts.Name, table)
	case ts.FullName == "" && ts.Name == "":
		ts.FullName = table // names the message, as a fetched schema's does
	}
	desc, err := ts.Descriptor()
	if err != nil {
		return nil, inputErr("-table-schema=%s: %v", path, err)
	}
	c, err := codecOf(desc)
	if err != nil {
		return nil, inputErr("-table-schema=%s: %v", path, err)
	}
	return c, nil
}

// tableFetchErr gives a failed read of the table's schema its exit code
// and what to check: the token or the table (5), the workspace's
// reachability (4), or else a failure (1).
func (f *flags) tableFetchErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return interrupted(ctx, err)
	}
	var fe *zbstream.TableFetchError
	var se *zbstream.SchemaError
	switch {
	case errors.As(err, &fe) && (fe.StatusCode == http.StatusUnauthorized || fe.StatusCode == http.StatusForbidden):
		return cli.WithCode(cli.ExitAuth, core.Errorf("-table-schema: %w (the workspace %s refused the token from %s)", err, f.workspaceURL, f.tokenFrom))
	case errors.As(err, &fe) && fe.StatusCode == http.StatusNotFound:
		return cli.WithCode(cli.ExitAuth, core.Errorf("-table-schema: %w (check -table and -workspace-url: the workspace has no table %s that the token may read)", err, f.table))
	case errors.As(err, &fe) && fe.Retryable:
		return cli.WithCode(cli.ExitUnreachable, core.Errorf("-table-schema: workspace unreachable: %w", err))
	case errors.As(err, &se):
		return cli.WithCode(cli.ExitFailure, core.Errorf("-table-schema: %w (the table has a column no proto field can hold)", err))
	}
	return cli.ClientErr(core.Errorf("-table-schema: %w", err), "-ca-file")
}

// pinnedDescriptor returns the table descriptor st pins, if st is a
// -table-schema ingestion's.
func pinnedDescriptor(st *state) []byte {
	if st == nil || st.Format != formatTableProto {
		return nil
	}
	return st.TableDescriptor
}
