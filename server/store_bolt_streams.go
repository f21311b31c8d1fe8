package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// The bolt store's operations on streams: their state and metadata, the
// idempotent create, appends checked in the transaction that writes them,
// reads, retire.

// boltState is the mutable part of a stream's metadata.
type boltState struct {
	watermark int64
	records   int64
	retired   bool
}

func (st boltState) encode() []byte {
	b := make([]byte, 17)
	binary.BigEndian.PutUint64(b, uint64(st.watermark))
	binary.BigEndian.PutUint64(b[8:], uint64(st.records))
	if st.retired {
		b[16] = 1
	}
	return b
}

func decodeBoltState(b []byte) (boltState, error) {
	if len(b) != 17 {
		return boltState{}, fmt.Errorf("server: bolt store: corrupt stream state (%d bytes)", len(b))
	}
	return boltState{
		watermark: int64(binary.BigEndian.Uint64(b)),
		records:   int64(binary.BigEndian.Uint64(b[8:])),
		retired:   b[16] == 1,
	}, nil
}

// loadState reads stream id's watermark, record count and retired flag from
// the state bucket, or ErrStreamNotFound.
func loadState(states *bolt.Bucket, id string) (boltState, error) {
	raw := states.Get([]byte(id))
	if raw == nil {
		return boltState{}, fmt.Errorf("%w: %q", ErrStreamNotFound, id)
	}
	st, err := decodeBoltState(raw)
	if err != nil {
		return boltState{}, fmt.Errorf("stream %q: %w", id, err)
	}
	return st, nil
}

// loadMeta reads stream id's metadata in tx, or ErrStreamNotFound.
func loadMeta(tx *bolt.Tx, id string) (StreamMeta, error) {
	raw := tx.Bucket(boltBucketMeta).Get([]byte(id))
	if raw == nil {
		return StreamMeta{}, fmt.Errorf("%w: %q", ErrStreamNotFound, id)
	}
	var m StreamMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return StreamMeta{}, fmt.Errorf("server: bolt store: stream %q metadata: %w", id, err)
	}
	st, err := loadState(tx.Bucket(boltBucketState), id)
	if err != nil {
		return StreamMeta{}, err
	}
	m.Watermark, m.Records, m.Retired = st.watermark, st.records, st.retired
	return m, nil
}

// CreateStream implements Store.
func (s *BoltStore) CreateStream(ctx context.Context, meta StreamMeta) (StreamMeta, bool, error) {
	var stored StreamMeta
	var created bool
	err := s.write(ctx, len(meta.Descriptor)+len(meta.AvroSchema)+len(meta.ArrowSchema), func(tx *bolt.Tx) error {
		stored, created = StreamMeta{}, false
		reqs := tx.Bucket(boltBucketRequests)
		reqKey := []byte(requestKey(meta.Principal, meta.Table, meta.RequestID))
		if meta.RequestID != "" {
			m, found, err := findByRequest(tx, reqKey, meta)
			if err != nil {
				return err
			}
			if found {
				stored = m
				return nil
			}
		}
		metas := tx.Bucket(boltBucketMeta)
		m := cloneMeta(meta)
		if m.ID == "" {
			seq, err := metas.NextSequence()
			if err != nil {
				return fmt.Errorf("server: bolt store: %w", err)
			}
			m.ID = fmt.Sprintf("stream-%d", seq)
		}
		if metas.Get([]byte(m.ID)) != nil {
			return fmt.Errorf("server: stream %q already exists", m.ID)
		}
		m.Watermark, m.Records, m.Retired = -1, 0, false
		raw, err := json.Marshal(StreamMeta{
			ID: m.ID, Kind: m.Kind, Table: m.Table, Principal: m.Principal,
			RecordType: m.RecordType, Descriptor: m.Descriptor, AvroSchema: m.AvroSchema, ArrowSchema: m.ArrowSchema, RequestID: m.RequestID,
		})
		if err != nil {
			return fmt.Errorf("server: bolt store: %w", err)
		}
		if err := metas.Put([]byte(m.ID), raw); err != nil {
			return fmt.Errorf("server: bolt store: %w", err)
		}
		if err := tx.Bucket(boltBucketState).Put([]byte(m.ID), boltState{watermark: -1}.encode()); err != nil {
			return fmt.Errorf("server: bolt store: %w", err)
		}
		if _, err := tx.Bucket(boltBucketRecords).CreateBucket([]byte(m.ID)); err != nil {
			return fmt.Errorf("server: bolt store: %w", err)
		}
		if m.RequestID != "" {
			if err := reqs.Put(reqKey, []byte(m.ID)); err != nil {
				return fmt.Errorf("server: bolt store: %w", err)
			}
		}
		stored, created = m, true
		return nil
	})
	if err != nil {
		return StreamMeta{}, false, err
	}
	return stored, created, nil
}

// findByRequest finds the stream of meta's principal, table and request
// id. Databases written before request ids were scoped keyed the requests
// bucket by the bare id: such an entry counts only if its stream has the
// same principal and table.
func findByRequest(tx *bolt.Tx, reqKey []byte, meta StreamMeta) (StreamMeta, bool, error) {
	reqs := tx.Bucket(boltBucketRequests)
	if id := reqs.Get(reqKey); id != nil {
		m, err := loadMeta(tx, string(id))
		return m, err == nil, err
	}
	if id := reqs.Get([]byte(meta.RequestID)); id != nil {
		m, err := loadMeta(tx, string(id))
		if err != nil {
			return StreamMeta{}, false, err
		}
		if m.Principal == meta.Principal && m.Table == meta.Table && m.RequestID == meta.RequestID {
			return m, true, nil
		}
	}
	return StreamMeta{}, false, nil
}

// Stream implements Store.
func (s *BoltStore) Stream(_ context.Context, id string) (StreamMeta, error) {
	var m StreamMeta
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		m, err = loadMeta(tx, id)
		return err
	})
	return m, err
}

// Append implements Store. The contract is checked in the transaction that
// writes, so concurrent Appends to one stream cannot interleave wrongly: of
// two Appends at the same offset, one is stored and the other refused.
//
// Each batch is encoded inside the transaction, by the committer, not
// here: the server's receive budget covers the records while they wait,
// and an encoded copy made before waiting would double what waits (issue
// 21); in the committer, copies exist for one group at a time.
func (s *BoltStore) Append(ctx context.Context, id string, batches []Batch) error {
	size := 0
	for _, b := range batches {
		size += encodedSize(b.Records)
	}
	if len(batches) == 0 {
		// Nothing to write: check the stream as an Append would.
		return s.view(func(tx *bolt.Tx) error {
			m, err := loadMeta(tx, id)
			if err != nil {
				return err
			}
			return checkAppend(m, nil)
		})
	}
	return s.write(ctx, size, func(tx *bolt.Tx) error {
		key := []byte(id)
		states := tx.Bucket(boltBucketState)
		st, err := loadState(states, id)
		if err != nil {
			return err
		}
		if err := checkAppend(StreamMeta{ID: id, Watermark: st.watermark, Retired: st.retired}, batches); err != nil {
			return err
		}
		recs := tx.Bucket(boltBucketRecords).Bucket(key)
		if recs == nil {
			return fmt.Errorf("server: bolt store: stream %q has no records bucket", id)
		}
		for _, b := range batches {
			if err := recs.Put(offsetKey(b.Offset), s.encode(b.Records)); err != nil {
				return fmt.Errorf("server: bolt store: %w", err)
			}
			st.records += int64(len(b.Records))
		}
		st.watermark = batches[len(batches)-1].Offset
		if err := states.Put(key, st.encode()); err != nil {
			return fmt.Errorf("server: bolt store: %w", err)
		}
		return nil
	})
}

// Batch implements BatchReader.
func (s *BoltStore) Batch(_ context.Context, id string, offset int64) (Batch, error) {
	var out Batch
	err := s.view(func(tx *bolt.Tx) error {
		recs := tx.Bucket(boltBucketRecords).Bucket([]byte(id))
		if recs == nil {
			return fmt.Errorf("%w: %q", ErrStreamNotFound, id)
		}
		v := recs.Get(offsetKey(offset))
		if v == nil {
			return fmt.Errorf("%w: stream %q offset %d", ErrBatchNotFound, id, offset)
		}
		records, err := decodeBatch(v)
		if err != nil {
			return fmt.Errorf("server: bolt store: stream %q offset %d: %w", id, offset, err)
		}
		out = Batch{Offset: offset, Records: records}
		return nil
	})
	return out, err
}

// Retire implements Store.
func (s *BoltStore) Retire(ctx context.Context, id string) (int64, error) {
	var wm int64
	err := s.write(ctx, 0, func(tx *bolt.Tx) error {
		key := []byte(id)
		states := tx.Bucket(boltBucketState)
		st, err := loadState(states, id)
		if err != nil {
			return err
		}
		wm = st.watermark
		if st.retired {
			return nil
		}
		st.retired = true
		if err := states.Put(key, st.encode()); err != nil {
			return fmt.Errorf("server: bolt store: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return wm, nil
}

// Streams implements Store.
func (s *BoltStore) Streams(_ context.Context) ([]StreamMeta, error) {
	var out []StreamMeta
	err := s.view(func(tx *bolt.Tx) error {
		out = out[:0]
		return tx.Bucket(boltBucketMeta).ForEach(func(k, _ []byte) error {
			m, err := loadMeta(tx, string(k))
			if err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []StreamMeta{}
	}
	return out, nil
}

// Records implements Store.
func (s *BoltStore) Records(_ context.Context, id string) ([]Batch, error) {
	var out []Batch
	err := s.view(func(tx *bolt.Tx) error {
		out = nil
		recs := tx.Bucket(boltBucketRecords).Bucket([]byte(id))
		if recs == nil {
			return fmt.Errorf("%w: %q", ErrStreamNotFound, id)
		}
		out = []Batch{}
		return recs.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("server: bolt store: stream %q: corrupt offset key", id)
			}
			records, err := decodeBatch(v)
			if err != nil {
				return fmt.Errorf("server: bolt store: stream %q offset %d: %w", id, int64(binary.BigEndian.Uint64(k)), err)
			}
			out = append(out, Batch{Offset: int64(binary.BigEndian.Uint64(k)), Records: records})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
