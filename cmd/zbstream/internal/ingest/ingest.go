package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
)

// Run is the ingest command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	// The client dials lazily: this checks the endpoint and options only.
	var copts []zbstream.Option
	if f.token != "" { // a server in open mode (zbstream serve's default) takes none
		copts = append(copts, zbstream.WithToken(f.token))
	}
	if f.appName != "" {
		copts = append(copts, zbstream.WithAppName(f.appName))
	}
	if f.caFile != "" {
		copts = append(copts, zbstream.WithCAFile(f.caFile))
	}
	if f.workspaceURL != "" {
		copts = append(copts, zbstream.WithWorkspaceURL(f.workspaceURL))
	}
	client, err := zbstream.NewClient(f.endpoint, copts...)
	if err != nil {
		return f.clientErr(err)
	}
	defer client.Close()
	if f.format != formatFlagJSON {
		return runArrow(ctx, f, client, start, stdout, stderr)
	}
	src := source{path: f.file, format: formatJSON}
	if f.descSet != "" {
		md, err := loadMessage(f.descSet, f.message)
		if err != nil {
			return err
		}
		src.format, src.md = formatProto, md
	}
	if f.avroSchema != "" {
		if src.avro, err = loadAvroSchema(f.avroSchema); err != nil {
			return err
		}
		src.format = formatAvro
	}
	if f.tableSchema.on {
		src.format = formatTableProto // the schema is read once the state file is
	}
	if src.check, err = checker(src.md); err != nil {
		return err
	}
	if err := checkInputFile(f.file); err != nil {
		return err
	}

	lock, err := lockState(f.state)
	if err != nil {
		return err
	}
	defer lock.unlock()
	st, err := loadState(f.state)
	if err != nil {
		return err
	}
	if f.tableField != "" {
		return runRouted(ctx, f, client, src, st, start, stdout, stderr)
	}
	if st != nil && st.TableField != "" {
		return st.matchesFlags(f.state, src, f.table) // a routed state: never dropped below
	}
	if src.format == formatTableProto {
		if st != nil && st.StreamID != "" {
			// Another ingestion's stream: said before any schema is read.
			if err := st.matchesFlags(f.state, src, f.table); err != nil {
				return err
			}
		}
		if src.table, err = loadTableSchema(ctx, f, client, pinnedDescriptor(st)); err != nil {
			return err
		}
	}
	// A state file without a stream id was saved before a create that
	// failed or was cut short: nothing was sent under it, so its stream,
	// if the server made it, is empty. The flags and the file may change
	// then; the request id is kept (to get that stream back) unless the
	// table or the record type changed.
	var requestID string
	if st != nil && st.StreamID == "" {
		if st.matchesFlags(f.state, src, f.table) == nil {
			requestID = st.ClientRequestID
		}
		st = nil
	}
	batchRecords, batchBytes := f.batchRecords, f.batchBytes
	var cuts []int64
	if st != nil {
		if err := st.matchesFlags(f.state, src, f.table); err != nil {
			return err
		}
		if f.batchSet && (st.BatchRecords != batchRecords || st.BatchBytes != batchBytes) {
			fmt.Fprintf(stderr, "ingest: continuing with the state file's batches of %s and %d bytes\n", plural(int64(st.BatchRecords), "record"), st.BatchBytes)
		}
		batchRecords, batchBytes, cuts = st.BatchRecords, st.BatchBytes, st.Cuts
	}

	sopts := []zbstream.StreamOption{zbstream.WithMaxInflight(f.maxInflight, core.DefaultMaxInflightBytes)}
	if src.md != nil {
		sopts = append(sopts, zbstream.WithProtoMessage(dynamicpb.NewMessage(src.md)))
	}
	if src.avro != nil {
		sopts = append(sopts, zbstream.WithAvroSchema(src.avro.text))
	}
	if src.table != nil {
		sopts = append(sopts, zbstream.WithJSONToProto(src.table.desc))
	}
	var s *zbstream.Stream
	defer func() {
		// Close is idempotent: this only acts on early returns.
		if s != nil {
			closeCtx, cancel := context.WithTimeout(context.Background(), f.closeTimeout)
			defer cancel()
			_ = s.Close(closeCtx)
		}
	}()
	resume := func() error {
		var err error
		s, err = client.ResumeStream(ctx, st.Table, st.StreamID, sopts...)
		if err != nil {
			s = nil
			if ce := (*zbstream.ConnectionError)(nil); errors.As(err, &ce) && ce.Code == core.CodeNotFound {
				err = core.Errorf("%w (state file %s names stream %s, which this server does not have: a retired stream, or one of another server? "+
					"To go on with it, give -endpoint its server. To send %s again into a new stream, remove %s or pass a new -state: "+
					"what the old stream holds stays in the table, so its records would be there twice)",
					err, f.state, st.StreamID, f.file, f.state)
			}
			return interrupted(ctx, f.clientErr(err))
		}
		return nil
	}
	resumed := st != nil && !st.Done
	if resumed {
		// Resume before reading the file, so that refused credentials or
		// an unreachable server show at once, not after a long file.
		if err := resume(); err != nil {
			return err
		}
	}

	// The records the server would refuse go to the dead-letter file
	// (-skip-invalid, or the one the state names), or end the run. Once
	// a state file exists its list of them rules: the scan collects them
	// all and matchesFile compares.
	aside, skip, err := invalidHandling(f, st, src)
	if err != nil {
		return err
	}
	defer aside.abort()
	info, err := scan(ctx, src, batchRecords, batchBytes, cuts, skip)
	if err != nil {
		return interrupted(ctx, err)
	}
	scanned := time.Since(start)
	if st != nil {
		changed, err := st.matchesFile(f.state, src, info, aside.places())
		if err != nil {
			return err
		}
		if st.Done {
			fmt.Fprintf(stdout, "ingest: %s is already done: %s in stream %s of %s (state %s); nothing sent\n",
				f.file, plural(st.Records, "record"), st.StreamID, st.Table, f.state)
			return nil
		}
		if changed {
			if err := acceptChanged(f, st, src, info, aside, s.LastDurable(), stderr); err != nil {
				return err
			}
		}
	} else {
		if st, err = newState(f, src, info, aside, batchRecords, batchBytes, stdout, stderr); st == nil {
			return err
		}
		recreate := requestID != "" // the create may have been made by an earlier run
		if !recreate {
			requestID = zbstream.NewClientRequestID()
		}
		st.Table, st.ClientRequestID = f.table, requestID
		if src.md != nil {
			st.ProtoMessage = string(src.md.FullName())
		}
		if src.avro != nil {
			st.AvroSchemaSHA256 = src.avro.sha256
		}
		if src.table != nil {
			st.TableDescriptor = src.table.raw
		}
		if err := st.save(f.state); err != nil {
			return cli.WithCode(cli.ExitFailure, err)
		}
		// Idempotent: after a crash between the create and the save below,
		// the same request id gets the same stream back, still empty.
		s, err = client.CreatePersistentStream(ctx, st.Table, append(sopts, zbstream.WithClientRequestID(st.ClientRequestID))...)
		if err != nil {
			s = nil
			return interrupted(ctx, f.clientErr(err))
		}
		st.StreamID = s.StreamID()
		if err := st.save(f.state); err != nil {
			return cli.WithCode(cli.ExitFailure, err)
		}
		if recreate {
			// A re-create after a crash: the stream is empty by
			// construction (nothing is sent before its id is saved), but
			// a create's answer carries no watermark, so ask for it
			// rather than assume it.
			closeCtx, cancel := context.WithTimeout(context.Background(), f.closeTimeout)
			err := s.Close(closeCtx)
			cancel()
			s = nil
			if err != nil {
				return interrupted(ctx, f.clientErr(err))
			}
			resumed = true
			if err := resume(); err != nil {
				return err
			}
		}
	}
	w := s.LastDurable() // the server's watermark: calls 0..w are durable
	if w >= st.Batches {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("stream %s holds offsets up to %d, but %s has only %s: the stream does not belong to this file", st.StreamID, w, f.file, plural(st.Batches, "call")))
	}
	run := &run{f: f, st: st, src: src, s: s, stdout: stdout, stderr: stderr, resumedAt: w, resumed: resumed, start: start, scanned: scanned, failedAt: -1}
	err = run.run(ctx)
	s = nil // closed by run
	return err
}

// newState commits the records set aside by a first run and
// returns the state of the ingestion it starts (not saved yet), or nil
// when the file holds no record to send (said on stdout) or on error.
func newState(f *flags, src source, info fileInfo, aside *setAside, batchRecords int, batchBytes int64, stdout, stderr io.Writer) (*state, error) {
	if err := aside.commit(); err != nil {
		return nil, err
	}
	noteSetAside(stderr, src, aside)
	if info.records == 0 {
		fmt.Fprintf(stdout, "ingest: %s holds no records; nothing to do\n", f.file)
		return nil, nil
	}
	abs, _ := filepath.Abs(f.file)
	return &state{
		Version: stateVersion, File: abs, Size: info.size, SHA256: info.sha256,
		Format: src.format, Records: info.records,
		BatchRecords: batchRecords, BatchBytes: batchBytes, Batches: info.batches,
		DeadLetters: deadLetterPath(f, nil), Skipped: aside.places(),
		Endpoint: f.endpoint, Created: time.Now().UTC(),
	}, nil
}

// sameSkips returns the skip function of a run that resumes st: the
// records st sets aside are skipped again, and only they; another means
// the file changed since it was checked.
func sameSkips(st *state, src source) func(*invalidRecord) error {
	i := 0
	return func(bad *invalidRecord) error {
		if i < len(st.Skipped) && st.Skipped[i] == bad.place.n {
			i++
			return nil
		}
		return inputErr("%v: %s changed during the ingestion", bad, src.path)
	}
}

// interrupted turns an error caused by Ctrl-C into exit code 130.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return cli.WithCode(cli.ExitInterrupted, fmt.Errorf("interrupted before anything was sent in this run; run again to continue (%w)", context.Cause(ctx)))
	}
	return err
}

// deadLetterPath is where records set aside go: -skip-invalid, or
// else the dead-letter file the state file names; "" for none.
func deadLetterPath(f *flags, st *state) string {
	if f.skipInvalid != "" {
		abs, err := filepath.Abs(f.skipInvalid)
		if err != nil {
			return f.skipInvalid
		}
		return abs
	}
	if st != nil {
		return st.DeadLetters
	}
	return ""
}

// invalidHandling returns the dead-letter file of this run (its
// abort is the caller's to defer) and what the scan does with a record the
// server would refuse: set it aside there, or, with neither -skip-invalid
// nor a state file, end the run.
func invalidHandling(f *flags, st *state, src source) (*setAside, func(*invalidRecord) error, error) {
	aside, err := newSetAside(src.format, deadLetterPath(f, st))
	if err != nil {
		return nil, nil, err
	}
	if st == nil && f.skipInvalid == "" {
		return aside, refuseInvalid, nil
	}
	return aside, aside.add, nil
}

// noteSetAside says which records went to the dead-letter file.
func noteSetAside(stderr io.Writer, src source, aside *setAside) {
	if len(aside.bad) == 0 {
		return
	}
	const shown = 10
	var where []string
	for _, b := range aside.bad[:min(len(aside.bad), shown)] {
		where = append(where, fmt.Sprint(b.place.n))
	}
	if len(aside.bad) > shown {
		where = append(where, "...")
	}
	unit := src.unit()
	if len(aside.bad) > 1 {
		unit += "s"
	}
	fmt.Fprintf(stderr, "ingest: set aside %s the server would refuse (%s %s) in the dead-letter file %s\n",
		plural(int64(len(aside.bad)), "record"), unit, strings.Join(where, ", "), aside.path)
}

// acceptChanged takes a file that changed after the part pinned when
// the server refused a call (see pin): the calls after the pin are
// made afresh from it. That is safe only while the server holds nothing
// past the pin (w, its watermark, tells): what it holds past it was made
// from the old content.
func acceptChanged(f *flags, st *state, src source, info fileInfo, aside *setAside, w int64, stderr io.Writer) error {
	pin := st.Pin
	if w >= pin.Calls {
		return inputErr("%s changed, but stream %s holds calls up to %d, past the %s pinned when the server refused a call: restore %s as it was, and run the same command again",
			src.path, st.StreamID, w, plural(pin.Calls, "call"), src.path)
	}
	if aside.path == "" && len(aside.bad) > 0 {
		// Without a dead-letter file, a record the server would refuse
		// ends the run, as in a first run.
		return refuseInvalid(aside.bad[0])
	}
	if err := aside.commit(); err != nil {
		return err
	}
	noteSetAside(stderr, src, aside)
	st.Size, st.SHA256, st.Records, st.Batches = info.size, info.sha256, info.records, info.batches
	st.Skipped, st.DeadLetters = aside.places(), aside.path
	if err := st.save(f.state); err != nil {
		return cli.WithCode(cli.ExitFailure, err)
	}
	where := "(the server holds none of it)"
	if pin.Records > 0 {
		where = "after " + src.records(pin.Last, pin.Last) + ", the last record the server holds"
	}
	fmt.Fprintf(stderr, "ingest: %s changed %s: going on with its new content (%s in %s)\n",
		src.path, where, plural(info.records, "record"), plural(info.batches, "call"))
	return nil
}
