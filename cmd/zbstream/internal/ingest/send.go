package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
)

// run sends a file's calls from the one after the watermark, and
// closes the stream.
type run struct {
	f              *flags
	st             *state
	src            source
	s              *zbstream.Stream
	stdout, stderr io.Writer
	resumedAt      int64 // the watermark the run started from
	resumed        bool
	start          time.Time
	scanned        time.Duration // checking the file took this long

	tr       tracker
	base     int64 // records durable before this run
	prog     *progress
	failedAt int64 // the call whose IngestBatch failed, or -1
}

// run sends, waits for the calls to be durable, closes the stream and
// marks the state done, or says why not and what to do.
func (r *run) run(ctx context.Context) error {
	st, s, f := r.st, r.s, r.f
	sendErr := r.send(ctx)
	if sendErr == nil {
		// Everything is sent: wait until it is durable (bounded by the
		// flush timeout, 5 minutes), Ctrl-C still heard.
		if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
			sendErr = core.Errorf("stream %s: waiting for the last calls: %w", st.StreamID, err)
		}
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), f.closeTimeout)
	defer cancel()
	if sendErr != nil && ctx.Err() == nil {
		// A failure, not an interruption: keep what is in flight from
		// blocking us, but still let it land if it can.
		_ = s.Close(closeCtx)
		r.prog.end()
		return r.failed(sendErr)
	}
	if ctx.Err() != nil {
		// A second Ctrl-C quits at once, as a SIGKILL would: that loses
		// nothing either, since the next run goes on from the watermark.
		signal.Reset(os.Interrupt)
		r.prog.end()
		fmt.Fprintf(r.stderr, "ingest: stopping: waiting up to %s for what was sent to become durable (Ctrl-C again to quit at once; nothing acknowledged is lost)\n", f.closeTimeout)
	}
	closeErr := s.Close(closeCtx)
	r.prog.end()
	last := s.LastDurable()
	durable := r.tr.update(last)
	stats := s.Stats()
	if ctx.Err() != nil {
		where := "no call durable yet"
		if last >= 0 {
			where = fmt.Sprintf("up to call %d of %d", last, st.Batches-1)
		}
		msg := fmt.Sprintf("interrupted: %d of %s durable in stream %s (%s); run the same command again to continue",
			durable, plural(st.Records, "record"), st.StreamID, where)
		if closeErr != nil {
			msg += fmt.Sprintf(" (close: %v)", core.Unprefixed(closeErr))
		}
		return cli.WithCode(cli.ExitInterrupted, errors.New(msg))
	}
	if closeErr != nil {
		return r.failed(core.Errorf("closing stream %s with calls durable up to %d of %d: %w", st.StreamID, last, st.Batches-1, closeErr))
	}
	if last != st.Batches-1 {
		// Cannot happen after a clean close of a fully sent file; never
		// mark done what the server does not hold.
		return cli.WithCode(cli.ExitFailure, fmt.Errorf("stream %s closed with calls durable up to %d, not %d (run the same command again to continue)", st.StreamID, last, st.Batches-1))
	}
	st.Done, st.Finished = true, time.Now().UTC()
	if err := st.save(f.state); err != nil {
		return cli.WithCode(cli.ExitFailure, err)
	}
	el := time.Since(r.start)
	sent := durable - r.base
	from := "a new stream"
	if r.resumed {
		from = fmt.Sprintf("watermark %d (%s already on the server)", r.resumedAt, plural(r.base, "record"))
	}
	aside := ""
	if n := len(st.Skipped); n > 0 {
		aside = fmt.Sprintf(", %s set aside in %s", plural(int64(n), "record"), st.DeadLetters)
	}
	fmt.Fprintf(r.stdout, "ingest: done: %s of %s in stream %s of %s%s; sent %s in %s from %s, reconciled %d, resent %d, reconnects %d, in %s (%s checking the file; %s rec/s)\n",
		plural(st.Records, "record"), f.file, st.StreamID, st.Table, aside, plural(sent, "record"), plural(stats.Accepted, "call"), from,
		stats.Reconciled, stats.Resent, stats.Reconnects,
		fmtDuration(el), fmtDuration(r.scanned), fmtRate(float64(sent)/(el-r.scanned).Seconds()))
	return nil
}

// failed says why the run failed and what to do: a refusal for good
// names the refused records (see refused); anything else can be retried
// as it is.
func (r *run) failed(err error) error {
	if ee := (*cli.ExitError)(nil); errors.As(err, &ee) {
		return err // the command's own, with its code and advice
	}
	if ce, ok := refused(err); ok {
		return r.refused(err, ce, r.s.LastDurable())
	}
	if r.failedAt >= 0 {
		err = core.Errorf("stream %s failed at call %d of %d: %w", r.st.StreamID, r.failedAt, r.st.Batches-1, err)
	}
	return r.f.clientErr(core.Errorf("%w (run the same command again to continue)", err))
}

// send sends the calls after the watermark.
func (r *run) send(ctx context.Context) error {
	rr, _, _, closeFile, err := r.src.open(false)
	if err != nil {
		return err
	}
	defer closeFile()
	b := &batcher{r: &skipper{r: rr, skip: sameSkips(r.st, r.src)}, maxRecords: r.st.BatchRecords, maxBytes: r.st.BatchBytes, cuts: r.st.Cuts}
	var records int64
	// Skip the calls the server holds.
	for k := int64(0); k <= r.resumedAt; k++ {
		batch, err := b.next()
		if err != nil {
			if err == io.EOF {
				err = inputErr("%s ended at call %d, before the watermark %d", r.src.path, k, r.resumedAt)
			}
			return err
		}
		records += int64(len(batch))
		if k%1024 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	r.base = records
	r.tr.durable = mark{offset: r.resumedAt, records: records, first: b.first, last: b.last}
	r.prog = newProgress(r.stderr, isTerminal(r.stderr), r.f.interval, r.st.Records, r.base,
		func() int64 { return r.tr.update(r.s.LastDurable()) }, "record")
	for k := r.resumedAt + 1; ; k++ {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		batch, err := b.next()
		if err == io.EOF {
			if k != r.st.Batches {
				return inputErr("%s now holds %s, not %d: it changed during the ingestion", r.src.path, plural(k, "call"), r.st.Batches)
			}
			return nil
		}
		if err != nil {
			return err
		}
		// Noted before it is sent, so that a failure names its records
		// even when the stream failed before taking it.
		records += int64(len(batch))
		r.tr.sent(mark{offset: k, records: records, first: b.first, last: b.last})
		off, err := r.s.IngestBatch(ctx, batch)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			r.failedAt = k
			return err
		}
		if off != k {
			return cli.WithCode(cli.ExitFailure, fmt.Errorf("call %d got offset %d: the stream and the file disagree", k, off))
		}
		if k%256 == 0 {
			r.tr.update(r.s.LastDurable())
		}
	}
}
