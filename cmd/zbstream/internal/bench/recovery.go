package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/server"
)

// recoveryRecord is the size of the records -recovery streams.
const recoveryRecord = 100

// recoveryRoundTimeout bounds one round: a fault that does not fire, or
// acks that do not come back, fail the measurement.
const recoveryRoundTimeout = 15 * time.Second

// recovery measures, on a persistent stream that ingests without
// pause against the in-process ack-only server, the time from a fault to
// the first acknowledgement on the next connection: after a close signal
// (a session rotation; the client leaves at once) and after a dropped
// connection with backoff disabled. It prints p50 and p99 of each.
func recovery(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	fmt.Fprintf(stdout, "zbstream bench -recovery: %d rounds per fault, persistent stream of %d B records, backoff disabled; %s\n",
		cfg.rounds, recoveryRecord, machineLine())
	for _, f := range []struct {
		name  string
		fault server.Fault
	}{
		{"close signal", server.Fault{Kind: server.FaultCloseSignal, Delay: 50 * time.Millisecond}},
		{"dropped connection", server.Fault{Kind: server.FaultDrop}},
	} {
		ds, err := recoveryRounds(ctx, cfg, f.fault, func(i int) {
			if (i+1)%50 == 0 {
				fmt.Fprintf(stderr, "  %s: %d/%d rounds\n", f.name, i+1, cfg.rounds)
			}
		})
		if err != nil {
			return fmt.Errorf("-recovery, %s: %w", f.name, err)
		}
		fmt.Fprintf(stdout, "  %-19s p50 %8s  p99 %8s  (min %s, max %s, %d rounds)\n", f.name+":",
			fmtMillis(durPercentile(ds, 50)), fmtMillis(durPercentile(ds, 99)), fmtMillis(ds[0]), fmtMillis(ds[len(ds)-1]), len(ds))
	}
	return nil
}

// recoveryRounds injects the fault cfg.rounds times, one at a time, and
// returns the recovery times, sorted.
func recoveryRounds(ctx context.Context, cfg config, fault server.Fault, progress func(int)) ([]time.Duration, error) {
	srv, ep, stop, err := benchServer("ackonly")
	if err != nil {
		return nil, err
	}
	defer stop()
	obs := newRecoveryObserver()
	c, err := zbstream.NewClient(ep, zbstream.WithObserver(obs))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	s, err := c.CreatePersistentStream(ctx, cfg.table,
		zbstream.WithRetries(100), zbstream.WithBackoff(zbstream.Backoff{Initial: time.Nanosecond, Max: time.Nanosecond}),
		// A small window: requests are always in flight, and a reconnect
		// resends little.
		zbstream.WithMaxInflight(100, 16<<20),
		zbstream.WithOpenTimeout(5*time.Second), zbstream.WithAckTimeout(10*time.Second))
	if err != nil {
		return nil, cli.ClientErr(err, "-ca-file")
	}
	// The observer sees the driver's events in order, under its lock:
	// the first Completed after a Connected is an ack on the new
	// connection. It is attached after the create, which is no recovery.
	obs.attach()
	sctx, cancel := context.WithCancel(ctx)
	ingested := make(chan error, 1)
	go func() { ingested <- recoveryLoad(sctx, s, obs) }()
	defer func() {
		cancel()
		<-ingested
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = s.Close(cctx)
		ccancel()
	}()

	ds := make([]time.Duration, 0, cfg.rounds)
	for i := range cfg.rounds {
		d, err := recoveryRound(ctx, srv, s.StreamID(), fault, obs, ingested)
		if err != nil {
			return nil, core.Errorf("round %d: %w", i+1, err)
		}
		ds = append(ds, d)
		progress(i)
	}
	slices.Sort(ds)
	return ds, nil
}

// recoveryLoad ingests records without pause (the window throttles it)
// until ctx ends.
func recoveryLoad(ctx context.Context, s *zbstream.Stream, obs *recoveryObserver) error {
	rec := benchRecord(recoveryRecord)
	for {
		if _, err := s.IngestRecord(ctx, rec); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			obs.fail(err)
			return err
		}
	}
}

// recoveryRound injects the fault once and returns the time from its
// firing to the first ack on a later connection. Waking up on Fired may lag
// on a loaded machine, so the firing time is the earliest of three times
// that all follow it closely: when Fired was seen, when the client saw its
// connection end (a drop), and when it took the last ack of the old
// connection (the server acknowledges what it committed right after the
// fault fires, before it drops or signals).
func recoveryRound(ctx context.Context, srv *server.Server, id string, fault server.Fault, obs *recoveryObserver, ingested <-chan error) (time.Duration, error) {
	// Let acks flow on the current connection first.
	if _, err := obs.waitAck(ctx, obs.snapshot().conns, 20); err != nil {
		return 0, err
	}
	before := obs.snapshot()
	injected := time.Now()
	h := srv.Inject(server.Match{StreamID: id}, fault)
	timer := time.NewTimer(recoveryRoundTimeout)
	defer timer.Stop()
	select {
	case <-h.Fired():
	case <-timer.C:
		h.Remove()
		return 0, errors.New("the fault did not fire")
	case err := <-ingested:
		h.Remove()
		return 0, core.Errorf("the stream failed: %w", err)
	case <-ctx.Done():
		h.Remove()
		return 0, ctx.Err()
	}
	fired := time.Now()
	ackAt, err := obs.waitAck(ctx, before.conns+1, 1)
	if err != nil {
		return 0, err
	}
	after := obs.snapshot()
	if after.discs > before.discs && after.discAt.Before(fired) {
		fired = after.discAt
	}
	if t := after.lastOldAck; t.After(injected) && t.Before(fired) {
		fired = t
	}
	return max(ackAt.Sub(fired), 0), nil
}

// recoveryObserver follows a stream's connections and acks.
type recoveryObserver struct {
	zbstream.NopObserver
	mu      sync.Mutex
	on      bool
	st      recoveryState
	acks    int           // acks on the current connection
	ackAt   time.Time     // the first ack on the current connection
	lastAck time.Time     // the latest ack
	changed chan struct{} // closed and replaced at every event
	err     error
}

// recoveryState is what a round compares before and after a fault.
type recoveryState struct {
	conns      int       // connections opened since attach
	discs      int       // connections that ended with an error
	discAt     time.Time // when the last one ended
	lastOldAck time.Time // the last ack before the current connection opened
}

func newRecoveryObserver() *recoveryObserver {
	return &recoveryObserver{changed: make(chan struct{})}
}

func (o *recoveryObserver) attach() {
	o.mu.Lock()
	o.on = true
	o.mu.Unlock()
}

func (o *recoveryObserver) event() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// Connected starts counting the acks of a new connection.
func (o *recoveryObserver) Connected(bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.on {
		return
	}
	o.st.conns++
	o.st.lastOldAck = o.lastAck
	o.acks = 0
	o.event()
}

// Completed counts an ack (a resume watermark's reconciliation is none).
func (o *recoveryObserver) Completed(_ int64, reconciled bool) {
	if reconciled {
		return
	}
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.on {
		return
	}
	if o.acks == 0 {
		o.ackAt = now
	}
	o.lastAck = now
	o.acks++
	o.event()
}

// Disconnected notes when a connection ended.
func (o *recoveryObserver) Disconnected(core.Code) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.st.discs++
	o.st.discAt = now
	o.event()
}

func (o *recoveryObserver) fail(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err
	o.event()
}

func (o *recoveryObserver) snapshot() recoveryState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.st
}

// waitAck waits until connection number conn (or a later one) has had n
// acks and returns the time of its first.
func (o *recoveryObserver) waitAck(ctx context.Context, conn, n int) (time.Time, error) {
	timer := time.NewTimer(recoveryRoundTimeout)
	defer timer.Stop()
	for {
		o.mu.Lock()
		ok, at, err, ch := o.st.conns >= conn && o.acks >= n, o.ackAt, o.err, o.changed
		o.mu.Unlock()
		switch {
		case ok:
			return at, nil
		case err != nil:
			return time.Time{}, core.Errorf("the stream failed: %w", err)
		}
		select {
		case <-ch:
		case <-timer.C:
			return time.Time{}, errors.New("acks did not flow again")
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// durPercentile is the nearest-rank p-th percentile of sorted ds.
func durPercentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds))*p/100+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// fmtMillis formats d in milliseconds with three decimals.
func fmtMillis(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}
