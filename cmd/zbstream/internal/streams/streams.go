package streams

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// Environment variables read by the streams command when the flag is not
// given (a token on the command line shows in the process list).
const (
	envAdmin    = "ZBSTREAM_ADMIN"
	envEndpoint = "ZBSTREAM_ENDPOINT"
)

const retireTimeout = 30 * time.Second

const usage = `Usage: zbstream streams <subcommand> [flags] [ID]

Subcommands:
  list             list the streams (id, kind, table, principal, type, watermark, records, state)
  show ID          show one stream
  records ID       print a stream's records, one a line (-from OFFSET, -limit N)
  retire ID        retire a persistent stream (the RetireStream RPC)

They read a running "zbstream serve" through its admin endpoint (-admin,
default ` + cli.DefaultAdminURL + `), or with -data DIR a bolt data directory
directly, when no server is running on it. Retire goes to the gRPC
-endpoint (default ` + cli.DefaultEndpoint + `), or into the -data directory.
The token defaults to $` + cli.EnvToken + `.

Run "zbstream streams <subcommand> -h" for its flags.
`

// flags are the flags every streams subcommand takes.
type flags struct {
	admin, data, token, ca string
	json                   bool
	from                   int64 // records
	limit                  int   // records
	endpoint, table        string
}

func newFlags(sub, synopsis string, stderr io.Writer) (*flag.FlagSet, *flags) {
	f := &flags{}
	fs := cli.NewFlags("streams "+sub, "streams "+synopsis, stderr)
	fs.StringVar(&f.admin, "admin", "", "admin endpoint `URL` of the server (default $"+envAdmin+" or "+cli.DefaultAdminURL+")")
	fs.StringVar(&f.data, "data", "", "read this bolt data `directory` directly instead (the server must not be running on it)")
	fs.StringVar(&f.token, "token", "", "bearer `token` (default $"+cli.EnvToken+"); none: an open-mode server")
	fs.StringVar(&f.ca, "ca", "", "CA certificate `file` (PEM) to trust for a TLS server")
	fs.BoolVar(&f.json, "json", false, "print JSON (records: one JSON object a line, with offset and index)")
	switch sub {
	case "records":
		fs.Int64Var(&f.from, "from", 0, "first `offset` to print")
		fs.IntVar(&f.limit, "limit", 0, "print at most `n` offsets (a batch ingested at one offset prints all its records); 0: all")
	case "retire":
		fs.StringVar(&f.endpoint, "endpoint", "", "gRPC endpoint `URL` of the server (default $"+envEndpoint+" or "+cli.DefaultEndpoint+")")
		fs.StringVar(&f.table, "table", "", "the stream's `table`, catalog.schema.table (default: looked up with -admin or -data)")
	}
	return fs, f
}

// Run is the streams command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return cli.UsageErr("streams: missing subcommand (list, show, records or retire)")
	}
	sub := args[0]
	var synopsis string
	switch sub {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, usage)
		return cli.ErrHelp
	case "list":
		synopsis = "list [flags]"
	case "show", "records", "retire":
		synopsis = sub + " [flags] ID"
	default:
		fmt.Fprint(stderr, usage)
		return cli.UsageErr("streams: unknown subcommand %q", sub)
	}
	fs, f := newFlags(sub, synopsis, stderr)
	pos, err := cli.ParseAnywhere(fs, args[1:])
	if err != nil {
		return err
	}
	want := 1
	if sub == "list" {
		want = 0
	}
	if len(pos) != want {
		fs.Usage()
		if want == 0 {
			return cli.UsageErr("streams list: unexpected argument %q", pos[0])
		}
		return cli.UsageErr("streams %s: want one stream ID, got %d arguments", sub, len(pos))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if set["data"] && (set["admin"] || set["endpoint"]) {
		return cli.UsageErr("-data reads a directory directly: it excludes -admin and -endpoint")
	}
	if f.from < 0 || f.limit < 0 {
		return cli.UsageErr("-from and -limit must not be negative")
	}
	if f.token == "" {
		f.token = os.Getenv(cli.EnvToken)
	}
	if f.admin == "" {
		f.admin = envOr(envAdmin, cli.DefaultAdminURL)
	}
	if f.endpoint == "" {
		f.endpoint = envOr(envEndpoint, cli.DefaultEndpoint)
	}

	// retire through the gRPC endpoint needs the admin only to learn the
	// table when -table is not given.
	var src streamSource
	if sub != "retire" || f.table == "" || f.data != "" {
		if f.data != "" {
			src, err = openDataSource(f.data)
		} else {
			src, err = newAdminSource(f.admin, f.token, f.ca)
		}
		if err != nil {
			return err
		}
		defer src.close()
	}

	switch sub {
	case "list":
		return listCmd(ctx, src, f, stdout)
	case "show":
		s, err := src.show(ctx, pos[0])
		if err != nil {
			return err
		}
		return printStream(stdout, s, f.json)
	case "records":
		return records(ctx, src, pos[0], f, stdout)
	default:
		return retire(ctx, src, pos[0], f, stdout)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func listCmd(ctx context.Context, src streamSource, f *flags, stdout io.Writer) error {
	list, err := src.list(ctx)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tTABLE\tPRINCIPAL\tTYPE\tWATERMARK\tRECORDS\tSTATE")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", s.ID, s.Kind, s.Table, s.Principal, s.RecordType, s.Watermark, s.Records, streamState(s))
	}
	return tw.Flush()
}

func streamState(s admin.StreamInfo) string {
	if s.Retired {
		return "retired"
	}
	return "active"
}

func printStream(w io.Writer, s admin.StreamInfo, asJSON bool) error {
	if asJSON {
		return writeJSON(w, s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", s.ID)
	fmt.Fprintf(tw, "kind:\t%s\n", s.Kind)
	fmt.Fprintf(tw, "table:\t%s\n", s.Table)
	fmt.Fprintf(tw, "principal:\t%s\n", s.Principal)
	fmt.Fprintf(tw, "record type:\t%s\n", s.RecordType)
	if s.DescriptorBytes > 0 {
		fmt.Fprintf(tw, "descriptor:\t%d bytes\n", s.DescriptorBytes)
	}
	if len(s.AvroSchema) > 0 {
		fmt.Fprintf(tw, "avro schema:\t%s\n", admin.CompactJSON(s.AvroSchema))
	}
	fmt.Fprintf(tw, "watermark:\t%d\n", s.Watermark)
	fmt.Fprintf(tw, "records:\t%d\n", s.Records)
	if c := s.Arrow; c != nil {
		fmt.Fprintf(tw, "received:\t%d frames, %d rows\n", c.FramesReceived, c.RowsReceived)
		fmt.Fprintf(tw, "stored:\t%d frames, %d rows\n", c.FramesStored, c.RowsStored)
		fmt.Fprintf(tw, "acknowledged:\t%d frames, %d rows\n", c.FramesAcked, c.RowsAcked)
	}
	fmt.Fprintf(tw, "state:\t%s\n", streamState(s))
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// records prints records page by page: a JSON record as its JSON
// text, an Avro record decoded as JSON, another (proto) as base64; with
// -json each as an object with its offset and index.
func records(ctx context.Context, src streamSource, id string, f *flags, stdout io.Writer) error {
	from, left := f.from, f.limit
	enc := json.NewEncoder(stdout)
	for {
		n := admin.DefaultLimit
		if left > 0 && left < n {
			n = left
		}
		p, err := src.records(ctx, id, from, n)
		if err != nil {
			return err
		}
		for _, r := range p.Records {
			if r.JSON != nil {
				r.JSON = admin.CompactJSON(r.JSON) // the admin endpoint indents its answers
			}
			switch {
			case f.json:
				err = enc.Encode(r)
			case r.JSON != nil:
				_, err = fmt.Fprintf(stdout, "%s\n", r.JSON)
			default:
				_, err = fmt.Fprintln(stdout, base64.StdEncoding.EncodeToString(r.Data))
			}
			if err != nil {
				return err
			}
		}
		if p.Next <= from || p.Next > p.Watermark {
			return nil
		}
		if left > 0 {
			if left -= int(p.Next - from); left <= 0 {
				return nil
			}
		}
		from = p.Next
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// retire retires a persistent stream with the RetireStream RPC (or
// in the -data directory).
//
// The RetireStream answer carries nothing (the service's contract), so the
// last committed offset printed is what the stream's source says once it is
// retired; when the admin endpoint cannot tell (only -endpoint and -table
// reach the server), the line leaves it out.
func retire(ctx context.Context, src streamSource, id string, f *flags, stdout io.Writer) error {
	var (
		w     int64
		known = true
		err   error
	)
	if ds, ok := src.(*dataSource); ok {
		w, err = ds.retire(ctx, id)
		if err != nil {
			return err
		}
	} else {
		table := f.table
		if table == "" {
			s, err := src.show(ctx, id)
			if err != nil {
				return fmt.Errorf("retire: finding the stream's table (or give -table): %w", err)
			}
			table = s.Table
		}
		if err = retireRPC(ctx, f, table, id); err != nil {
			return err
		}
		known = false // no source to read it from (-endpoint and -table only)
		if src != nil {
			s, err := src.show(ctx, id)
			w, known = s.Watermark, err == nil
		}
	}
	if f.json {
		out := struct {
			ID        string `json:"id"`
			Retired   bool   `json:"retired"`
			Watermark *int64 `json:"watermark,omitempty"`
		}{ID: id, Retired: true}
		if known {
			out.Watermark = &w
		}
		return writeJSON(stdout, out)
	}
	if !known {
		_, err = fmt.Fprintf(stdout, "retired %s\n", id)
		return err
	}
	_, err = fmt.Fprintf(stdout, "retired %s (last committed offset %d)\n", id, w)
	return err
}

func retireRPC(ctx context.Context, f *flags, table, id string) error {
	var opts []zbstream.Option
	if f.token != "" {
		opts = append(opts, zbstream.WithToken(f.token))
	}
	if f.ca != "" {
		if _, err := os.Stat(f.ca); err != nil {
			return cli.WithCode(cli.ExitInput, fmt.Errorf("-ca: %w", err))
		}
		opts = append(opts, zbstream.WithCAFile(f.ca))
	}
	c, err := zbstream.NewClient(f.endpoint, opts...)
	if err != nil {
		return cli.ClientErr(err, "-ca-file")
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, retireTimeout)
	defer cancel()
	if err := c.RetireStream(ctx, table, id); err != nil {
		return retireErr(err)
	}
	return nil
}

// retireErr is clientErr with the server's own words when it answered
// (NOT_FOUND for an unknown stream or another principal's); an unreachable
// server or a usage mistake (a TLS mismatch) keeps clientErr's words.
func retireErr(err error) error {
	e := cli.ClientErr(err, "-ca")
	var st *status.Status
	for inner := err; inner != nil; inner = errors.Unwrap(inner) {
		if s, ok := status.FromError(inner); ok {
			st = s // the innermost: the server's own message
		}
	}
	var ee *cli.ExitError
	if st != nil && st.Code() != codes.Unknown && errors.As(e, &ee) && ee.Code != cli.ExitUnreachable && ee.Code != cli.ExitUsage {
		return cli.WithCode(ee.Code, fmt.Errorf("retire refused: %s: %s", st.Code(), st.Message()))
	}
	return e
}
