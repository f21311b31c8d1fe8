package ingest

import (
	"context"
	"sync"
	"sync/atomic"
)

// arrowAcks follows the acknowledgements of an Arrow stream's batches, in
// offset order, and keeps the rows of the file durable so far: a batch
// is durable when Wait for its offset returns nil, and then every row up
// to its last is. A saver goroutine writes that count to the state file
// each time it grows, the newest count each time (so saves never queue up
// behind a slow disk; the count saved lags the acks by one save at most).
type arrowAcks struct {
	wait func(ctx context.Context, offset int64) error
	save func(durableRows int64) error

	mu     sync.Mutex
	queue  []sentBatch   // batches sent and not known durable, in offset order
	queued chan struct{} // 1 slot: a batch was queued

	durable atomic.Int64
	grew    chan struct{} // 1 slot: durable grew
	saveErr atomic.Pointer[error]
	saved   int64 // the count last saved (the saver's, then finish's)

	stop       context.CancelFunc
	followDone chan struct{}
	saverStop  chan struct{}
	saverDone  chan struct{}
}

// sentBatch is a batch sent at offset whose last row is the file's
// row rows (counted from 1): once it is durable, rows rows are.
type sentBatch struct{ offset, rows int64 }

// startArrowAcks starts following a stream, with base rows durable before
// it (saved already).
func startArrowAcks(base int64, wait func(context.Context, int64) error, save func(int64) error) *arrowAcks {
	ctx, stop := context.WithCancel(context.Background())
	a := &arrowAcks{wait: wait, save: save, queued: make(chan struct{}, 1), grew: make(chan struct{}, 1),
		saved: base, stop: stop, followDone: make(chan struct{}), saverStop: make(chan struct{}), saverDone: make(chan struct{})}
	a.durable.Store(base)
	go a.follow(ctx)
	go a.saver()
	return a
}

// sent queues the batch sent at offset, the file's rows up to rows.
func (a *arrowAcks) sent(offset, rows int64) {
	a.mu.Lock()
	a.queue = append(a.queue, sentBatch{offset, rows})
	a.mu.Unlock()
	select {
	case a.queued <- struct{}{}:
	default:
	}
}

// rows returns the rows durable so far.
func (a *arrowAcks) rows() int64 { return a.durable.Load() }

// err returns the error of a failed save, or nil.
func (a *arrowAcks) err() error {
	if p := a.saveErr.Load(); p != nil {
		return *p
	}
	return nil
}

// follow waits for each batch queued in turn. It ends when ctx does, or
// when a Wait fails: the stream failed, and no later batch becomes
// durable.
func (a *arrowAcks) follow(ctx context.Context) {
	defer close(a.followDone)
	for {
		b, ok := a.head(ctx)
		if !ok || a.wait(ctx, b.offset) != nil {
			return
		}
		a.advance(b)
	}
}

// head returns the first batch queued, waiting for one until ctx ends.
func (a *arrowAcks) head(ctx context.Context) (sentBatch, bool) {
	for {
		a.mu.Lock()
		if len(a.queue) > 0 {
			b := a.queue[0]
			a.mu.Unlock()
			return b, true
		}
		a.mu.Unlock()
		select {
		case <-a.queued:
		case <-ctx.Done():
			return sentBatch{}, false
		}
	}
}

// advance takes batch b, the first queued, as durable.
func (a *arrowAcks) advance(b sentBatch) {
	a.mu.Lock()
	a.queue = a.queue[1:]
	a.mu.Unlock()
	a.durable.Store(b.rows)
	select {
	case a.grew <- struct{}{}:
	default:
	}
}

// saver saves the durable count each time it grows, until told to stop
// or a save fails.
func (a *arrowAcks) saver() {
	defer close(a.saverDone)
	for {
		select {
		case <-a.saverStop:
			return
		case <-a.grew:
		}
		if n := a.durable.Load(); n != a.saved {
			if err := a.save(n); err != nil {
				a.saveErr.Store(&err)
				return
			}
			a.saved = n
		}
	}
}

// finish stops following once the stream is closed (every Wait then
// returns at once) and returns the rows durable: it takes every batch
// queued that is durable, in order, and saves the count if it grew since
// the last save. It returns the first save's error, if any.
func (a *arrowAcks) finish() (int64, error) {
	a.stop()
	<-a.followDone
	close(a.saverStop)
	<-a.saverDone
	done, cancel := context.WithCancel(context.Background())
	cancel() // Wait answers from what it knows, never waits
	for {
		b, ok := a.head(done)
		if !ok || a.wait(done, b.offset) != nil {
			break
		}
		a.advance(b)
	}
	n := a.durable.Load()
	if err := a.err(); err != nil {
		return n, err
	}
	if n != a.saved {
		if err := a.save(n); err != nil {
			return n, err
		}
		a.saved = n
	}
	return n, nil
}
