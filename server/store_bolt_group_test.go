package server

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The committer puts the small writes waiting behind large ones in a
// group of their own, ahead of them (issue 21: a one-record call waited
// for seconds of 16 MiB groups), but never two such groups in a row, so
// that a steady stream of small writes cannot starve the large ones; the
// large ones keep their order.
func TestBoltSmallWritesGoFirst(t *testing.T) {
	s, err := OpenBoltStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	var mu sync.Mutex
	groups := map[int][]string{} // transaction id -> writes applied in it
	var txs []int                // transaction ids in commit order
	record := func(name string, tx *bolt.Tx) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := groups[tx.ID()]; !ok {
			txs = append(txs, tx.ID())
		}
		groups[tx.ID()] = append(groups[tx.ID()], name)
	}
	var wg sync.WaitGroup
	write := func(name string, size int, before func()) {
		wg.Go(func() {
			err := s.write(ctx, size, func(tx *bolt.Tx) error {
				if before != nil {
					before()
				}
				record(name, tx)
				return nil
			})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	// queue submits a write and returns once the committer's channel holds
	// n writes, so that the writes wait in the order they are submitted.
	queue := func(name string, size, n int, before func()) {
		write(name, size, before)
		for len(s.reqs) < n {
			time.Sleep(time.Millisecond)
		}
	}

	// A large write holds the committer while others queue behind it.
	started, release := make(chan struct{}), make(chan struct{})
	write("block", smallWrite, func() { close(started); <-release })
	<-started
	queue("large1", smallWrite, 1, nil)
	// small1 queues small3 while its group is committed: the next group
	// may not be small writes alone.
	queue("small1", 10, 2, func() { queue("small3", 1, 1, nil) })
	queue("large2", 1<<20, 3, nil)
	queue("small2", smallWrite-1, 4, nil)
	close(release)
	wg.Wait()

	var got [][]string
	for _, id := range txs {
		got = append(got, groups[id])
	}
	want := [][]string{{"block"}, {"small1", "small2"}, {"large1", "large2", "small3"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("groups committed %q, want %q", got, want)
	}
}
