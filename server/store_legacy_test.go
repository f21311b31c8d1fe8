package server

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A database written before client_request_ids were scoped keys the
// requests bucket by the bare id: such an entry still finds its stream for
// the same principal and table, and nobody else's.
func TestStoreBoltLegacyRequestKey(t *testing.T) {
	ctx := t.Context()
	s, err := OpenBoltStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := mustCreate(t, s, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "alice", RequestID: "job-42"})
	// Rewrite its request entry the way the previous version stored it.
	err = s.db.Update(func(tx *bolt.Tx) error {
		reqs := tx.Bucket(boltBucketRequests)
		if err := reqs.Delete([]byte(requestKey("alice", "t", "job-42"))); err != nil {
			return err
		}
		return reqs.Put([]byte("job-42"), []byte(old.ID))
	})
	if err != nil {
		t.Fatal(err)
	}
	got, created, err := s.CreateStream(ctx, StreamMeta{Kind: KindPersistent, Table: "t", Principal: "alice", RequestID: "job-42"})
	if err != nil || created || got.ID != old.ID {
		t.Fatalf("owner's repeated create: %+v created=%v err=%v, want %q", got, created, err, old.ID)
	}
	for _, m := range []StreamMeta{
		{Kind: KindPersistent, Table: "t", Principal: "carol", RequestID: "job-42"},
		{Kind: KindPersistent, Table: "u", Principal: "alice", RequestID: "job-42"},
	} {
		got, created, err := s.CreateStream(ctx, m)
		if err != nil || !created || got.ID == old.ID {
			t.Fatalf("create %+v: %+v created=%v err=%v", m, got, created, err)
		}
	}
}
