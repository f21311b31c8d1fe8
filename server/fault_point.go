package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
)

// pending is what a committer holds between the points where faults act
// (a request of a stream call, a data frame of a DoPut call): what it took
// and has not stored yet, and whether it owes an ack for what it stored.
// Both kinds of call commit through one, so that a fault means the same on
// both.
type pending[T any] struct {
	items   []T
	needAck bool
	store   func([]T) error // appends items, durably
	ack     func() error    // sends the cumulative ack of what is stored
}

// flush stores what is pending and, with ack, sends the ack owed.
func (p *pending[T]) flush(ack bool) error {
	if len(p.items) > 0 {
		if err := p.store(p.items); err != nil {
			return err
		}
		p.items, p.needAck = nil, true
	}
	if ack && p.needAck {
		p.needAck = false
		return p.ack()
	}
	return nil
}

// act carries out a fault both kinds of call take at a point, f of kind
// FaultDrop, FaultCommitThenDrop or FaultCloseSignal (which starts a
// rotation with startClose); done says the call ends, with err.
func (p *pending[T]) act(f Fault, startClose func(time.Duration) error) (done bool, err error) {
	switch f.Kind {
	case FaultCommitThenDrop:
		if err := p.flush(false); err != nil {
			return true, err
		}
		return true, faultStatus(f, codes.Unavailable, "injected fault: connection dropped after commit, before ack")
	case FaultDrop:
		if err := p.flush(true); err != nil {
			return true, err
		}
		return true, faultStatus(f, codes.Unavailable, "injected fault: connection dropped")
	default: // FaultCloseSignal
		if err := p.flush(true); err != nil {
			return true, err
		}
		return false, startClose(f.Delay)
	}
}

// delayAck waits out a FaultDelayAcks fault's Delay, or until ctx (the
// call) ends: false.
func delayAck(ctx context.Context, f Fault) bool {
	t := time.NewTimer(f.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
