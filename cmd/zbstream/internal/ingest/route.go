package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/writer"
)

// runRouted is the ingest command with -table-field: every record
// goes to the table its field names, through a writer.Writer with at
// most -max-open-streams streams open, one persistent stream per table.
// st is the state file loaded, or nil.
func runRouted(ctx context.Context, f *flags, client *zbstream.Client, src source, st *state, start time.Time, stdout, stderr io.Writer) error {
	batchRecords, batchBytes := f.batchRecords, f.batchBytes
	if st != nil {
		switch {
		case st.TableField == "":
			return cli.UsageErr("state file %s belongs to table %s: give -table %s to continue, or a new -state", f.state, st.Table, st.Table)
		case st.TableField != f.tableField:
			return cli.UsageErr("state file %s routes records by their field %q, not %q: give -table-field %s to continue, or a new -state", f.state, st.TableField, f.tableField, st.TableField)
		case st.Format != src.format:
			return cli.UsageErr("state file %s was made for %s input, not %s", f.state, st.Format, src.format)
		}
		if f.batchSet && (st.BatchRecords != batchRecords || st.BatchBytes != batchBytes) {
			fmt.Fprintf(stderr, "ingest: continuing with the state file's batches of %s and %d bytes\n", plural(int64(st.BatchRecords), "record"), st.BatchBytes)
		}
		batchRecords, batchBytes = st.BatchRecords, st.BatchBytes
	}
	aside, skip, err := invalidHandling(f, st, src)
	if err != nil {
		return err
	}
	defer aside.abort()
	b, info, err := routed(ctx, src, f.tableField, batchRecords, batchBytes, true, skip, func(*routedCall) error { return nil })
	if err != nil {
		return interrupted(ctx, err)
	}
	scanned := time.Since(start)
	if st != nil {
		if _, err := st.matchesFile(f.state, src, info, aside.places()); err != nil {
			return err
		}
		for table, c := range b.counts {
			if ts := st.Tables[table]; ts == nil || ts.Records != c.Records || ts.Batches != c.Batches {
				return inputErr("state file %s: table %s's records in %s differ from those the state file names", f.state, table, src.path)
			}
		}
		if st.Done {
			fmt.Fprintf(stdout, "ingest: %s is already done: %s into %s (state %s); nothing sent\n",
				f.file, plural(st.Records, "record"), plural(int64(len(st.Tables)), "table"), f.state)
			return nil
		}
	} else {
		if st, err = newState(f, src, info, aside, batchRecords, batchBytes, stdout, stderr); st == nil {
			return err
		}
		st.TableField, st.Tables = f.tableField, b.counts
		// Every table's request id is saved before any stream is created
		// (one write for all), so that the Writer saves only stream ids.
		for _, ts := range st.Tables {
			ts.ClientRequestID = zbstream.NewClientRequestID()
		}
		if err := st.save(f.state); err != nil {
			return cli.WithCode(cli.ExitFailure, err)
		}
	}
	r := &routedSender{f: f, st: st, src: src, store: &stateStore{st: st, path: f.state},
		stdout: stdout, stderr: stderr, start: start, scanned: scanned,
		wm: map[string]int64{}, failed: map[string]*routedFailure{}}
	return r.run(ctx, client)
}

// routedSender sends a file's calls, every table's from the one after
// its watermark, and closes the streams.
type routedSender struct {
	f              *flags
	st             *state
	src            source
	store          *stateStore
	w              *writer.Writer
	stdout, stderr io.Writer
	start          time.Time
	scanned        time.Duration

	tr     routedTracker
	wm     map[string]int64          // each table's watermark, learned at its first call
	failed map[string]*routedFailure // tables failed in this run
	sent   int64                     // calls sent
}

func (r *routedSender) run(ctx context.Context, client *zbstream.Client) error {
	f := r.f
	w, err := writer.New(client, writer.Config{
		MaxOpenStreams: f.maxOpen, Store: r.store,
		Options: []zbstream.StreamOption{zbstream.WithMaxInflight(f.maxInflight, core.DefaultMaxInflightBytes)},
		OnAck:   r.tr.acked,
	})
	if err != nil {
		return cli.WithCode(cli.ExitFailure, err)
	}
	r.w = w
	prog := newProgress(r.stderr, isTerminal(r.stderr), f.interval, r.st.Records, 0, r.tr.durable, "record")
	sendErr := r.send(ctx)
	if sendErr == nil {
		// Every call is sent: wait until it is durable, Ctrl-C still heard.
		if err := w.Flush(ctx); err != nil && ctx.Err() == nil {
			r.noteFailed(err)
		}
	}
	if ctx.Err() != nil {
		prog.end()
		fmt.Fprintf(r.stderr, "ingest: stopping: waiting up to %s for what was sent to become durable (nothing acknowledged is lost)\n", f.closeTimeout)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), f.closeTimeout)
	closeErr := w.Close(closeCtx)
	cancel()
	prog.end()
	durable := r.tr.durable()
	switch {
	case ctx.Err() != nil:
		msg := fmt.Sprintf("interrupted: %d of %s durable; run the same command again to continue", durable, plural(r.st.Records, "record"))
		if closeErr != nil {
			msg += fmt.Sprintf(" (close: %v)", core.Unprefixed(closeErr))
		}
		return cli.WithCode(cli.ExitInterrupted, errors.New(msg))
	case sendErr != nil:
		return sendErr
	}
	r.noteFailed(closeErr)
	if len(r.failed) > 0 {
		return r.failures()
	}
	if err := r.store.markDone(); err != nil {
		return cli.WithCode(cli.ExitFailure, err)
	}
	st, ws := r.st, w.Stats()
	el := time.Since(r.start)
	sent := durable - r.tr.onServerRecords()
	aside := ""
	if n := len(st.Skipped); n > 0 {
		aside = fmt.Sprintf(", %s set aside in %s", plural(int64(n), "record"), st.DeadLetters)
	}
	fmt.Fprintf(r.stdout, "ingest: done: %s of %s into %s by field %q%s; sent %s in %s (%s already on the server), streams created %d, resumed %d, closed for another table %d, in %s (%s checking the file; %s rec/s)\n",
		plural(st.Records, "record"), f.file, plural(int64(len(st.Tables)), "table"), st.TableField, aside,
		plural(sent, "record"), plural(r.sent, "call"), plural(r.tr.onServerRecords(), "record"),
		ws.Creates, ws.Resumes, ws.Evictions,
		fmtDuration(el), fmtDuration(r.scanned), fmtRate(float64(sent)/(el-r.scanned).Seconds()))
	return nil
}

// send sends every table's calls after its watermark, in file order.
func (r *routedSender) send(ctx context.Context) error {
	_, _, err := routed(ctx, r.src, r.st.TableField, r.st.BatchRecords, r.st.BatchBytes, false, sameSkips(r.st, r.src), func(c *routedCall) error {
		return r.call(ctx, c)
	})
	return err
}

// call sends c unless its table's stream holds it already or the table
// failed in this run. A table that fails is noted and left; only an
// interruption or a stream that disagrees with the file ends the run.
func (r *routedSender) call(ctx context.Context, c *routedCall) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if _, failed := r.failed[c.table]; failed {
		return nil
	}
	wm, known := r.wm[c.table]
	if !known {
		var err error
		if wm, err = r.w.Watermark(ctx, c.table); err != nil {
			return r.tableFailed(ctx, c, err)
		}
		if n := r.st.Tables[c.table].Batches; wm >= n {
			return cli.WithCode(cli.ExitFailure, fmt.Errorf("table %s: its stream holds calls up to %d, but %s has only %s for it: the stream does not belong to this file",
				c.table, wm, r.src.path, plural(n, "call")))
		}
		r.wm[c.table] = wm
	}
	if c.k <= wm {
		r.tr.onServer(int64(len(c.records)))
		return nil
	}
	r.tr.sending(c.table, c.k, int64(len(c.records)))
	off, err := r.w.IngestBatch(ctx, c.table, c.records)
	if err != nil {
		return r.tableFailed(ctx, c, err)
	}
	if off != c.k {
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("table %s: call %d got offset %d: the stream and the file disagree", c.table, c.k, off))
	}
	r.sent++
	return nil
}

// routedFailure is why a table failed in a run, and at which call
// (nil: found failed after every call was sent).
type routedFailure struct {
	err  error
	call *routedCall
}

// tableFailed notes that c's table failed with err and goes on with the
// other tables, unless err ends the run: the interruption, or an open
// refused for a reason that no table escapes (an unreachable server,
// refused credentials), which a rerun continues.
func (r *routedSender) tableFailed(ctx context.Context, c *routedCall, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var ce *zbstream.ConnectionError
	if !errors.Is(err, zbstream.ErrStreamFailed) && errors.As(err, &ce) &&
		(ce.Code == core.CodeUnavailable || ce.Code == core.CodeDeadlineExceeded || ce.Code == core.CodeUnauthenticated) {
		return r.f.clientErr(core.Errorf("%w (run the same command again to continue)", err))
	}
	r.failed[c.table] = &routedFailure{err: err, call: c}
	fmt.Fprintf(r.stderr, "ingest: %v (%s); the other tables go on\n", core.Unprefixed(err), r.src.describe(c.first.n, c.last.n))
	return nil
}

// noteFailed notes the tables that failed, as Writer.Failed says, with
// err, the Flush's or Close's error, for a flush that failed otherwise.
func (r *routedSender) noteFailed(err error) {
	if err == nil {
		return
	}
	for _, te := range r.w.Failed() {
		if f := r.failed[te.Table]; f == nil {
			r.failed[te.Table] = &routedFailure{err: te}
		} else {
			f.err = te // the stream's failure says more than the call's
		}
	}
	if len(r.failed) == 0 { // a flush that timed out: no table failed for good
		r.failed[""] = &routedFailure{err: err}
	}
}

// failures says which tables failed and what to do, with the exit code
// of the first failure.
func (r *routedSender) failures() error {
	var lines []string
	for _, table := range slices.Sorted(maps.Keys(r.failed)) {
		f := r.failed[table]
		line := "  " + core.Unprefixed(f.err)
		if f.call != nil {
			line += " (at " + r.src.describe(f.call.first.n, f.call.last.n) + ")"
		}
		lines = append(lines, line)
	}
	code := cli.ExitFailure
	first := r.failed[slices.Sorted(maps.Keys(r.failed))[0]].err
	if ee := (*cli.ExitError)(nil); errors.As(r.f.clientErr(first), &ee) {
		code = ee.Code
	}
	hint := ""
	for _, f := range r.failed {
		if pe := (*core.ProtocolError)(nil); errors.As(f.err, &pe) && pe.Rule == core.WatermarkAboveAttempted {
			hint = "\nanother writer added to a table's stream while this run had it closed (an ingest with a copy of this state file, or another program with its stream ids?): nothing of this run went after it."
			break
		}
	}
	return cli.WithCode(code, fmt.Errorf("%s failed, the others are done:\n%s%s\nonce the cause is fixed, run the same command again: it continues each table after what the server holds",
		plural(int64(len(lines)), "table"), strings.Join(lines, "\n"), hint))
}
