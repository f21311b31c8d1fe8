package server

import (
	"context"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// The bolt store's committer: queued writes applied in groups, one
// transaction and one sync each (group commit), small writes first, the
// database file's mapped pages dropped as bbolt writes them.

// boltReq is one write waiting for the committer.
type boltReq struct {
	apply func(tx *bolt.Tx) error // checks first, then writes: on error it has written nothing
	size  int
	err   chan error
}

// write hands apply to the committer and waits until its group is synced.
// Once queued, a write is waited for even if ctx ends, so that a returned
// error never hides a stored write.
func (s *BoltStore) write(ctx context.Context, size int, apply func(tx *bolt.Tx) error) error {
	r := &boltReq{apply: apply, size: size, err: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrStoreClosed
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	return <-r.err
}

// commitLoop is the committer: it takes the queued writes and applies
// them in one transaction committed with one sync, up to the group bounds;
// writes queued while it syncs form the next group. Small writes (under
// smallWrite: creates, retires, appends of a few records) go first, in a
// group of their own, so that a flood of large appends from some clients
// does not put others' small writes behind all of it (issue 21: a
// one-record call waited for seconds of 16 MiB groups); large ones keep
// their order.
func (s *BoltStore) commitLoop() {
	defer close(s.done)
	var backlog, group []*boltReq
	smallLast := false
	var dropped int64 // bbolt's page allocations at the last dropMapped
	for {
		if len(backlog) == 0 {
			r, ok := <-s.reqs
			if !ok {
				return
			}
			backlog = append(backlog, r)
		}
	drain:
		for len(backlog) < 4*s.maxGroup {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				backlog = append(backlog, r)
			default:
				break drain
			}
		}
		// Small writes waiting: a group of them alone, committed (and
		// synced) in a fraction of a large group's time; but never twice in
		// a row, so that a steady stream of small writes cannot starve the
		// large ones.
		onlySmall := !smallLast && slices.ContainsFunc(backlog, func(r *boltReq) bool { return r.size < smallWrite })
		smallLast = onlySmall
		group, size := group[:0], 0
		kept := backlog[:0]
		for _, r := range backlog {
			fits := len(group) < s.maxGroup && (size < s.maxBytes || r.size < smallWrite) && (!onlySmall || r.size < smallWrite)
			if fits && (len(group) == 0 || r.size < smallWrite || size+r.size <= s.maxBytes) {
				group = append(group, r)
				size += r.size
			} else {
				kept = append(kept, r)
			}
		}
		clear(backlog[len(kept):])
		backlog = kept
		s.commit(group)
		if a := s.pageAlloc(); a-dropped >= dropMappedEvery {
			dropped = a
			dropMapped(s.db)
		}
		clear(group)
	}
}

// dropMappedEvery is how many bytes of pages bbolt writes between two
// dropMapped. They are counted as bbolt allocates them (pageAlloc), not as
// records: an append rewrites the stream's last leaf whole, reading it
// through the mapping, and bbolt splits a leaf only beyond four keys, so a
// leaf holds up to four earlier batches besides the new one. Counted by
// records, 64 MiB of 8 MiB batches kept 250-300 MiB of the file resident
// (issue 25); counted by pages, what the mapping holds stays under
// dropMappedEvery and one group's leaves.
const dropMappedEvery = 64 << 20

// pageAlloc is the bytes of pages bbolt has allocated for writing since
// the database was opened: every page a commit writes (the leaves and
// branches it rewrites whole, the freelist), which bounds what it read
// through the mapping to rewrite them.
func (s *BoltStore) pageAlloc() int64 {
	st := s.db.Stats()
	return st.TxStats.GetPageAlloc()
}

// smallWrite is the size under which a write is never kept waiting by the
// group's byte bound.
const smallWrite = 64 << 10

// commit applies group in one transaction and answers each request. A
// request whose apply fails gets its error and is left out: the
// transaction is rolled back and the others are applied again without it
// (as bbolt's own Batch does), so no failed request leaves partial writes.
func (s *BoltStore) commit(group []*boltReq) {
	for len(group) > 0 {
		errs := make([]error, len(group))
		failed := false
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, r := range group {
				if errs[i] = r.apply(tx); errs[i] != nil {
					failed = true
				}
			}
			if failed {
				return errRetryGroup
			}
			return nil
		})
		for _, p := range s.scratch {
			p.free()
		}
		clear(s.scratch)
		s.scratch = s.scratch[:0]
		if err != nil && !errors.Is(err, errRetryGroup) {
			for _, r := range group {
				r.err <- fmt.Errorf("server: bolt store: commit: %w", err)
			}
			return
		}
		if !failed {
			s.commits.Add(1)
			for _, r := range group {
				r.err <- nil
			}
			return
		}
		kept := group[:0]
		for i, r := range group {
			if errs[i] != nil {
				r.err <- errs[i]
			} else {
				kept = append(kept, r)
			}
		}
		group = kept
	}
}

var errRetryGroup = errors.New("server: bolt store: group has a failed write")
