package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

const ingestSynopsis = `ingest -endpoint URL -table catalog.schema.table [flags] FILE

Ingests FILE into a table exactly once, through a persistent stream. FILE
holds JSON lines (one JSON object per non-empty line), or, with
-proto-descriptor-set and -proto-message, length-delimited protobuf records
(each a varint length, then the message).

A state file (FILE.zbstate unless -state says otherwise) keeps the stream id
and how the file maps to offsets. After Ctrl-C or a crash, run the same
command again: it resumes the stream and continues after the records the
server already holds, with no duplicate and no gap. A finished file is not
sent again. The file must not change until it is done.

Exit codes: 0 done, 1 failure, 2 bad flags (a TLS mismatch with the server
included: an untrusted certificate, the wrong scheme), 3 unreadable or malformed input
(or a state file for another file), 4 server unreachable, 5 credentials or
table refused, 130 interrupted (run again to continue).

Flags:`

// Defaults of the ingest command.
const (
	ingestDefaultBatchRecords = 100
	ingestDefaultBatchBytes   = 4 << 20
	ingestDefaultMaxInflight  = 1000
)

type ingestFlags struct {
	endpoint, token, table, appName, caFile string
	state                                   string
	descSet, message                        string
	batchRecords, maxInflight               int
	batchBytes                              int64
	interval, closeTimeout                  time.Duration
	file                                    string
	batchSet                                bool // -batch-size or -batch-bytes given
}

func parseIngestFlags(args []string, stderr io.Writer) (*ingestFlags, error) {
	var f ingestFlags
	fs := newFlags("ingest", ingestSynopsis, stderr)
	fs.StringVar(&f.endpoint, "endpoint", "", "server `URL`: https://host[:port], host:port (TLS) or http://host:port (plaintext)")
	fs.StringVar(&f.token, "token", "", "bearer `token` (default: $ZBSTREAM_TOKEN; none for a server in open mode)")
	fs.StringVar(&f.table, "table", "", "target `table`: catalog.schema.table")
	fs.StringVar(&f.caFile, "ca-file", "", "trust the CA certificates in this PEM `file` instead of the system roots")
	fs.StringVar(&f.appName, "app-name", "zbstream-ingest", "application `name` in the user agent")
	fs.StringVar(&f.state, "state", "", "state `file` (default FILE.zbstate, beside FILE)")
	fs.StringVar(&f.descSet, "proto-descriptor-set", "", "FileDescriptorSet `file` (protoc --descriptor_set_out --include_imports): FILE holds length-delimited protobuf records")
	fs.StringVar(&f.message, "proto-message", "", "full `name` of the records' message in the descriptor set, e.g. pkg.Event")
	fs.IntVar(&f.batchRecords, "batch-size", ingestDefaultBatchRecords, "records per call (fixed in the state file when the ingestion starts)")
	fs.Int64Var(&f.batchBytes, "batch-bytes", ingestDefaultBatchBytes, "at most this many `bytes` per call, as sent (fixed in the state file when the ingestion starts)")
	fs.IntVar(&f.maxInflight, "max-inflight", ingestDefaultMaxInflight, "calls sent and not yet acknowledged, at most")
	fs.DurationVar(&f.interval, "progress", 2*time.Second, "`interval` of progress lines when stderr is not a terminal; on a terminal a bar is redrawn (0: no progress at all)")
	fs.DurationVar(&f.closeTimeout, "close-timeout", 10*time.Second, "on Ctrl-C or a failure, how long to wait for what was sent to become durable")
	if err := parseFlags(fs, args, true); err != nil {
		return nil, err
	}
	if f.token == "" {
		f.token = os.Getenv(envToken)
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "batch-size" || fl.Name == "batch-bytes" {
			f.batchSet = true
		}
	})
	switch {
	case fs.NArg() != 1:
		fs.Usage()
		return nil, usageErr("ingest takes one FILE, got %d arguments", fs.NArg())
	case f.endpoint == "":
		return nil, usageErr("-endpoint is required")
	case f.table == "":
		return nil, usageErr("-table is required")
	case (f.descSet == "") != (f.message == ""):
		return nil, usageErr("-proto-descriptor-set and -proto-message go together")
	case f.batchRecords <= 0:
		return nil, usageErr("-batch-size must be positive")
	case f.batchBytes <= 0 || f.batchBytes > core.DefaultMaxCallBytes:
		return nil, usageErr("-batch-bytes must be between 1 and %d, the per-call limit", core.DefaultMaxCallBytes)
	case f.maxInflight <= 0:
		return nil, usageErr("-max-inflight must be positive")
	case f.closeTimeout <= 0:
		return nil, usageErr("-close-timeout must be positive")
	}
	if err := grpcio.CheckTable(f.table); err != nil {
		return nil, usageErr("-table: %v", err)
	}
	f.file = fs.Arg(0)
	if f.state == "" {
		f.state = f.file + ".zbstate"
	}
	return &f, nil
}

// runIngest is the ingest command.
func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseIngestFlags(args, stderr)
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
	client, err := zbstream.NewClient(f.endpoint, copts...)
	if err != nil {
		return clientErr(err)
	}
	defer client.Close()
	src := ingestSource{path: f.file, format: ingestFormatJSON}
	if f.descSet != "" {
		md, err := ingestLoadMessage(f.descSet, f.message)
		if err != nil {
			return err
		}
		src.format, src.md = ingestFormatProto, md
	}
	if fi, err := os.Stat(f.file); err != nil {
		return ingestInputErr("%v", err)
	} else if fi.IsDir() {
		return ingestInputErr("%s is a directory", f.file)
	}

	st, err := loadIngestState(f.state)
	if err != nil {
		return err
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
	if st != nil {
		if err := st.matchesFlags(f.state, src, f.table); err != nil {
			return err
		}
		if f.batchSet && (st.BatchRecords != batchRecords || st.BatchBytes != batchBytes) {
			fmt.Fprintf(stderr, "ingest: continuing with the state file's batches of %d records and %d bytes\n", st.BatchRecords, st.BatchBytes)
		}
		batchRecords, batchBytes = st.BatchRecords, st.BatchBytes
	}

	sopts := []zbstream.StreamOption{zbstream.WithMaxInflight(f.maxInflight, core.DefaultMaxInflightBytes)}
	if src.md != nil {
		sopts = append(sopts, zbstream.WithProtoMessage(dynamicpb.NewMessage(src.md)))
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
				err = fmt.Errorf("%w (state file %s names stream %s, which this server does not have: another server, or a retired stream?)", err, f.state, st.StreamID)
			}
			return ingestInterrupted(ctx, clientErr(err))
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

	info, err := ingestScan(ctx, src, batchRecords, batchBytes)
	if err != nil {
		return ingestInterrupted(ctx, err)
	}
	scanned := time.Since(start)
	if st != nil {
		if err := st.matchesFile(f.state, src, info); err != nil {
			return err
		}
		if st.Done {
			fmt.Fprintf(stdout, "ingest: %s is already done: %d records in stream %s of %s (state %s); nothing sent\n",
				f.file, st.Records, st.StreamID, st.Table, f.state)
			return nil
		}
	} else {
		if info.records == 0 {
			fmt.Fprintf(stdout, "ingest: %s holds no records; nothing to do\n", f.file)
			return nil
		}
		recreate := requestID != "" // the create may have been made by an earlier run
		if !recreate {
			if requestID, err = ingestRequestID(); err != nil {
				return err
			}
		}
		abs, _ := filepath.Abs(f.file)
		st = &ingestState{
			Version: ingestStateVersion, File: abs, Size: info.size, SHA256: info.sha256,
			Format: src.format, Records: info.records,
			BatchRecords: batchRecords, BatchBytes: batchBytes, Batches: info.batches,
			Endpoint: f.endpoint, Table: f.table, ClientRequestID: requestID, Created: time.Now().UTC(),
		}
		if src.md != nil {
			st.ProtoMessage = string(src.md.FullName())
		}
		if err := st.save(f.state); err != nil {
			return withCode(exitFailure, err)
		}
		// Idempotent: after a crash between the create and the save below,
		// the same request id gets the same stream back, still empty.
		s, err = client.CreatePersistentStream(ctx, st.Table, append(sopts, zbstream.WithClientRequestID(st.ClientRequestID))...)
		if err != nil {
			s = nil
			return ingestInterrupted(ctx, clientErr(err))
		}
		st.StreamID = s.StreamID()
		if err := st.save(f.state); err != nil {
			return withCode(exitFailure, err)
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
				return ingestInterrupted(ctx, clientErr(err))
			}
			resumed = true
			if err := resume(); err != nil {
				return err
			}
		}
	}
	w := s.LastDurable() // the server's watermark: calls 0..w are durable
	if w >= st.Batches {
		return withCode(exitFailure, fmt.Errorf("stream %s holds offsets up to %d, but %s has only %d calls: the stream does not belong to this file", st.StreamID, w, f.file, st.Batches))
	}

	run := &ingestRun{f: f, st: st, src: src, s: s, stderr: stderr, resumedAt: w}
	sendErr := run.send(ctx)
	if sendErr == nil {
		// Everything is sent: wait until it is durable (bounded by the
		// flush timeout, 5 minutes), Ctrl-C still heard.
		if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
			sendErr = clientErr(core.Errorf("stream %s: waiting for the last calls (run the same command again to continue): %w", st.StreamID, err))
		}
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), f.closeTimeout)
	defer cancel()
	if sendErr != nil && ctx.Err() == nil {
		// A failure, not an interruption: keep what is in flight from
		// blocking us, but still let it land if it can.
		_ = s.Close(closeCtx)
		run.prog.end()
		return sendErr
	}
	if ctx.Err() != nil {
		// A second Ctrl-C quits at once, as a SIGKILL would: that loses
		// nothing either, since the next run goes on from the watermark.
		signal.Reset(os.Interrupt)
		run.prog.end()
		fmt.Fprintf(stderr, "ingest: stopping: waiting up to %s for what was sent to become durable (Ctrl-C again to quit at once; nothing acknowledged is lost)\n", f.closeTimeout)
	}
	closeErr := s.Close(closeCtx)
	run.prog.end()
	last := s.LastDurable()
	durable := run.tr.update(last)
	stats := s.Stats()
	if ctx.Err() != nil {
		where := "no call durable yet"
		if last >= 0 {
			where = fmt.Sprintf("up to call %d of %d", last, st.Batches-1)
		}
		msg := fmt.Sprintf("interrupted: %d of %d records durable in stream %s (%s); run the same command again to continue",
			durable, st.Records, st.StreamID, where)
		if closeErr != nil {
			msg += fmt.Sprintf(" (close: %v)", closeErr)
		}
		return withCode(exitInterrupted, errors.New(msg))
	}
	if closeErr != nil {
		return clientErr(core.Errorf("closing stream %s with calls durable up to %d of %d (run the same command again to continue): %w", st.StreamID, last, st.Batches-1, closeErr))
	}
	if last != st.Batches-1 {
		// Cannot happen after a clean close of a fully sent file; never
		// mark done what the server does not hold.
		return withCode(exitFailure, fmt.Errorf("stream %s closed with calls durable up to %d, not %d (run the same command again to continue)", st.StreamID, last, st.Batches-1))
	}
	st.Done, st.Finished = true, time.Now().UTC()
	if err := st.save(f.state); err != nil {
		return withCode(exitFailure, err)
	}
	el := time.Since(start)
	sent := durable - run.base
	from := "a new stream"
	if resumed {
		from = fmt.Sprintf("watermark %d (%d records already on the server)", w, run.base)
	}
	fmt.Fprintf(stdout, "ingest: done: %d records of %s in stream %s of %s; sent %d records in %d calls from %s, reconciled %d, resent %d, reconnects %d, in %s (%s checking the file; %s rec/s)\n",
		st.Records, f.file, st.StreamID, st.Table, sent, stats.Accepted, from, stats.Reconciled, stats.Resent, stats.Reconnects,
		ingestFmtDuration(el), ingestFmtDuration(scanned), ingestFmtRate(float64(sent)/(el-scanned).Seconds()))
	return nil
}

// ingestInterrupted turns an error caused by Ctrl-C into exit code 130.
func ingestInterrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return withCode(exitInterrupted, fmt.Errorf("interrupted before anything was sent in this run; run again to continue (%w)", context.Cause(ctx)))
	}
	return err
}

// ingestRun sends a file's calls from the one after the watermark.
type ingestRun struct {
	f         *ingestFlags
	st        *ingestState
	src       ingestSource
	s         *zbstream.Stream
	stderr    io.Writer
	resumedAt int64

	tr   ingestTracker
	base int64 // records durable before this run
	prog *ingestProgress
}

func (r *ingestRun) send(ctx context.Context) error {
	rr, _, _, closeFile, err := r.src.open(false)
	if err != nil {
		return err
	}
	defer closeFile()
	b := &ingestBatcher{r: rr, maxRecords: r.st.BatchRecords, maxBytes: r.st.BatchBytes}
	var records int64
	// Skip the calls the server holds.
	for k := int64(0); k <= r.resumedAt; k++ {
		batch, err := b.next()
		if err != nil {
			if err == io.EOF {
				err = ingestInputErr("%s ended at call %d, before the watermark %d", r.src.path, k, r.resumedAt)
			}
			return err
		}
		records += int64(len(batch))
		if k%1024 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	r.base = records
	r.tr.durable = records
	r.prog = newIngestProgress(r.stderr, ingestIsTerminal(r.stderr), r.f.interval, r.st.Records, r.base,
		func() int64 { return r.tr.update(r.s.LastDurable()) })
	for k := r.resumedAt + 1; ; k++ {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		batch, err := b.next()
		if err == io.EOF {
			if k != r.st.Batches {
				return ingestInputErr("%s now holds %d calls, not %d: it changed during the ingestion", r.src.path, k, r.st.Batches)
			}
			return nil
		}
		if err != nil {
			return err
		}
		off, err := r.s.IngestBatch(ctx, batch)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return clientErr(core.Errorf("stream %s failed at call %d of %d (run the same command again to continue): %w", r.st.StreamID, k, r.st.Batches-1, err))
		}
		if off != k {
			return withCode(exitFailure, fmt.Errorf("call %d got offset %d: the stream and the file disagree", k, off))
		}
		records += int64(len(batch))
		r.tr.sent(k, records)
		if k%256 == 0 {
			r.tr.update(r.s.LastDurable())
		}
	}
}
