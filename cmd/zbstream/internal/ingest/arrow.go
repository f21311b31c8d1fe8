package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/proc"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/internal/arrowflight"
)

// runArrow is "ingest -format arrow|parquet": the file's rows, in batches
// of -batch-size rows, through an Arrow Flight stream into one table, at
// least once, resumable from the state file (see arrowState).
func runArrow(ctx context.Context, f *flags, client *zbstream.Client, start time.Time, stdout, stderr io.Writer) error {
	if err := checkInputFile(f.file); err != nil {
		return err
	}
	lock, err := lockState(f.state)
	if err != nil {
		return err
	}
	defer lock.unlock()
	st, err := loadArrowState(f.state)
	if err != nil {
		return err
	}
	format := f.arrowFormat()
	if st != nil {
		if err := st.matchesFlags(f.state, format, f.table); err != nil {
			return err
		}
	}
	size, sum, err := hashFile(f.file)
	if err != nil {
		return err
	}
	batchRows := f.batchRecords
	if st != nil {
		if err := st.matchesFile(f.state, f.file, size, sum); err != nil {
			return err
		}
		if st.Done {
			fmt.Fprintf(stdout, "ingest: %s is already done: %s into %s (state %s); nothing sent\n", f.file, plural(st.Rows, "row"), st.Table, f.state)
			return nil
		}
		if f.batchSet && st.BatchRows != batchRows {
			fmt.Fprintf(stderr, "ingest: continuing with the state file's batches of %s\n", plural(int64(st.BatchRows), "row"))
		}
		batchRows = st.BatchRows
	}
	in, err := openArrowInput(ctx, f.file, format, batchRows)
	if err != nil {
		return interrupted(ctx, err)
	}
	defer in.close()
	if err := arrowflight.CheckSchema(in.schema); err != nil {
		reason := err.Error()
		if ce := (*zbstream.ConfigError)(nil); errors.As(err, &ce) {
			reason = ce.Reason
		}
		return inputErr("%s: the schema cannot be sent: %s (cast such a column to its values' type first)", f.file, reason)
	}
	if in.rows == 0 {
		fmt.Fprintf(stdout, "ingest: %s holds no rows; nothing to do\n", f.file)
		return nil
	}
	if st == nil {
		abs, _ := filepath.Abs(f.file)
		st = &arrowState{Version: stateVersion, File: abs, Size: size, SHA256: sum, Format: format, Rows: in.rows,
			BatchRows: batchRows, Endpoint: f.endpoint, Table: f.table, Created: time.Now().UTC()}
		if err := st.save(f.state); err != nil {
			return cli.WithCode(cli.ExitFailure, err)
		}
	} else if st.Rows != in.rows {
		return inputErr("state file %s: %s now reads as %s, not %d", f.state, f.file, plural(in.rows, "row"), st.Rows)
	}
	r := &arrowRun{f: f, st: st, in: in, client: client, stdout: stdout, stderr: stderr, start: start}
	return r.run(ctx)
}

// arrowRun sends a file's rows after those the state file holds durable.
type arrowRun struct {
	f              *flags
	st             *arrowState
	in             *arrowInput
	client         *zbstream.Client
	stdout, stderr io.Writer
	start          time.Time

	sent, batches int64 // rows and batches sent by this run
}

// run opens the stream, sends, waits for the last acks, closes, and
// marks the state done, or says why not and what to do.
func (r *arrowRun) run(ctx context.Context) error {
	st, f := r.st, r.f
	base := st.DurableRows
	// A server that cannot be reached fails the open once the retry
	// budget is spent: exit code 4, as for JSON lines.
	s, err := arrowflight.New(ctx, r.client, st.Table, r.in.schema,
		arrowflight.WithMaxInflight(f.maxInflight, arrowInflightBytes))
	if err != nil {
		return interrupted(ctx, f.clientErr(err))
	}
	records, err := r.in.records(ctx, base)
	if err != nil {
		r.abandon(s)
		return err
	}
	batches, err := newRowBatches(r.in, records, base, int64(st.BatchRows))
	if err != nil {
		r.abandon(s)
		return interrupted(ctx, err)
	}
	defer batches.release()
	acks := startArrowAcks(base, s.Wait, func(n int64) error {
		c := *st
		c.DurableRows = n
		return c.save(f.state)
	})
	prog := newProgress(r.stderr, isTerminal(r.stderr), f.interval, st.Rows, base, acks.rows, "row")
	sendErr := r.send(ctx, s, batches, acks)
	if sendErr == nil {
		if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
			sendErr = err
		}
	}
	if ctx.Err() != nil {
		// A second Ctrl-C quits at once: the state file has the rows
		// durable so far, and the next run sends the rest.
		signal.Reset(os.Interrupt)
		prog.end()
		fmt.Fprintf(r.stderr, "ingest: stopping: waiting up to %s for what was sent to become durable (Ctrl-C again to quit at once)\n", f.closeTimeout)
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), f.closeTimeout)
	defer cancelClose()
	closeErr := s.Close(closeCtx)
	prog.end()
	durable, saveErr := acks.finish()
	st.DurableRows = durable
	again := fmt.Sprintf("%d of %s durable, kept in the state file %s: run the same command again to send the rest", durable, plural(st.Rows, "row"), f.state)
	switch {
	case ctx.Err() != nil:
		return cli.WithCode(cli.ExitInterrupted, fmt.Errorf("interrupted: %s (rows not recorded durable are sent again: any of them the server took lands twice); %s", again, r.peak()))
	case sendErr != nil:
		if ee := (*cli.ExitError)(nil); errors.As(sendErr, &ee) {
			return cli.WithCode(ee.Code, fmt.Errorf("%w (%s)", ee.Err, again))
		}
		return f.clientErr(core.Errorf("%w (%s)", sendErr, again))
	case closeErr != nil:
		return f.clientErr(core.Errorf("closing the stream: %w (%s)", closeErr, again))
	case saveErr != nil:
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("%w (the rows are durable on the server, but a rerun would send them again)", saveErr))
	case durable != st.Rows:
		// Cannot happen after a clean close of a fully sent file; never
		// mark done what the server does not hold.
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("the stream closed with %s", again))
	}
	st.Done, st.Finished = true, time.Now().UTC()
	if err := st.save(f.state); err != nil {
		return cli.WithCode(cli.ExitFailure, err)
	}
	el := time.Since(r.start)
	fmt.Fprintf(r.stdout, "ingest: done: %s of %s (%s) into %s; sent %s in %s in this run (%s durable before it), in %s (%s rows/s); %s\n",
		plural(st.Rows, "row"), f.file, r.in.kind, st.Table, plural(r.sent, "row"), batchCount(r.batches), plural(base, "row"),
		fmtDuration(el), fmtRate(float64(r.sent)/el.Seconds()), r.peak())
	return nil
}

// send sends every batch after the rows durable, and queues each with
// acks.
func (r *arrowRun) send(ctx context.Context, s *arrowflight.Stream, b *rowBatches, acks *arrowAcks) error {
	at := r.st.DurableRows // the rows before the next batch
	for {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err := acks.err(); err != nil {
			return cli.WithCode(cli.ExitFailure, err)
		}
		rec, err := b.next()
		if err == io.EOF {
			if at != r.st.Rows {
				return inputErr("%s ended after %s, not %d: it changed during the ingestion", r.f.file, plural(at, "row"), r.st.Rows)
			}
			return nil
		}
		if err != nil {
			return err
		}
		n := rec.NumRows()
		if at+n > r.st.Rows {
			rec.Release()
			return inputErr("%s holds more than its %s: it changed during the ingestion", r.f.file, plural(r.st.Rows, "row"))
		}
		off, err := s.IngestBatch(ctx, rec)
		rec.Release()
		if err != nil {
			return r.ingestErr(ctx, err, at, n)
		}
		at += n
		r.sent += n
		r.batches++
		acks.sent(off, at)
	}
}

// ingestErr is the error of an IngestBatch of rows at+1 .. at+n that
// failed: the stream's failure as it is, or what is wrong with the batch.
func (r *arrowRun) ingestErr(ctx context.Context, err error, at, n int64) error {
	var le *zbstream.LimitError
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, zbstream.ErrStreamFailed), errors.Is(err, zbstream.ErrClosed):
		return err
	case errors.As(err, &le):
		return cli.UsageErr("rows %d-%d of %s: %v: their batch alone is over the %d MiB in flight, give a smaller -batch-size (with a new -state)", at+1, at+n, r.f.file, err, arrowInflightBytes>>20)
	}
	return inputErr("rows %d-%d of %s cannot be sent: %v", at+1, at+n, r.f.file, err)
}

// abandon closes a stream nothing was sent on.
func (r *arrowRun) abandon(s *arrowflight.Stream) {
	ctx, cancel := context.WithTimeout(context.Background(), r.f.closeTimeout)
	defer cancel()
	_ = s.Close(ctx)
}

// batchCount says n batches.
func batchCount(n int64) string {
	if n == 1 {
		return "1 batch"
	}
	return fmt.Sprintf("%d batches", n)
}

// peak says the process's peak RSS so far, where it can be read.
func (r *arrowRun) peak() string {
	if b, ok := proc.VmHWM("self"); ok {
		return fmt.Sprintf("peak RSS %.1f MiB", float64(b)/(1<<20))
	}
	return "peak RSS not measured on this platform"
}
