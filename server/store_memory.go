package server

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// MemoryStore is a Store in memory: for tests and benchmarks. Nothing
// survives the process.
type MemoryStore struct {
	mu      sync.Mutex
	closed  bool
	streams map[string]*memStream
	byReq   map[string]string // requestKey(Principal, Table, RequestID) -> stream id
	seq     uint64
	discard bool   // the ack-only engine's store: keep watermarks, drop records
	arena   *arena // the stored records' bytes (arena.go)
}

type memStream struct {
	meta    StreamMeta
	batches []Batch
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	s := &MemoryStore{streams: map[string]*memStream{}, byReq: map[string]string{}, arena: &arena{}}
	// A store dropped without Close gives its mapped chunks back too.
	runtime.AddCleanup(s, (*arena).free, s.arena)
	return s
}

var _ Store = (*MemoryStore)(nil)

func (s *MemoryStore) stream(id string) (*memStream, error) {
	if s.closed {
		return nil, ErrStoreClosed
	}
	st, ok := s.streams[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrStreamNotFound, id)
	}
	return st, nil
}

// CreateStream implements Store.
func (s *MemoryStore) CreateStream(_ context.Context, meta StreamMeta) (StreamMeta, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return StreamMeta{}, false, ErrStoreClosed
	}
	key := requestKey(meta.Principal, meta.Table, meta.RequestID)
	if meta.RequestID != "" {
		if id, ok := s.byReq[key]; ok {
			return cloneMeta(s.streams[id].meta), false, nil
		}
	}
	if meta.ID == "" {
		s.seq++
		meta.ID = fmt.Sprintf("mem-%d", s.seq)
	}
	if _, dup := s.streams[meta.ID]; dup {
		return StreamMeta{}, false, fmt.Errorf("server: stream %q already exists", meta.ID)
	}
	meta.Watermark, meta.Records, meta.Retired = -1, 0, false
	meta = cloneMeta(meta)
	s.streams[meta.ID] = &memStream{meta: meta}
	if meta.RequestID != "" {
		s.byReq[key] = meta.ID
	}
	return cloneMeta(meta), true, nil
}

// Stream implements Store.
func (s *MemoryStore) Stream(_ context.Context, id string) (StreamMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stream(id)
	if err != nil {
		return StreamMeta{}, err
	}
	return cloneMeta(st.meta), nil
}

// Append implements Store. The records are copied into the store's arena.
func (s *MemoryStore) Append(_ context.Context, id string, batches []Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stream(id)
	if err != nil {
		return err
	}
	if err := checkAppend(st.meta, batches); err != nil {
		return err
	}
	for _, b := range batches {
		if s.discard {
			st.meta.Records += int64(len(b.Records))
			continue
		}
		recs := make([][]byte, len(b.Records))
		for i, r := range b.Records {
			recs[i] = s.arena.copy(r)
		}
		st.batches = append(st.batches, Batch{Offset: b.Offset, Records: recs})
		st.meta.Records += int64(len(b.Records))
	}
	if len(batches) > 0 {
		st.meta.Watermark = batches[len(batches)-1].Offset
	}
	return nil
}

// checkAppend enforces the Append contract: dense offsets from watermark+1
// on a live stream.
func checkAppend(meta StreamMeta, batches []Batch) error {
	if meta.Retired {
		return fmt.Errorf("server: stream %q is retired", meta.ID)
	}
	want := meta.Watermark + 1
	for _, b := range batches {
		if b.Offset != want {
			return fmt.Errorf("server: append to %q at offset %d, want %d", meta.ID, b.Offset, want)
		}
		want++
	}
	return nil
}

// Batch implements BatchReader.
func (s *MemoryStore) Batch(_ context.Context, id string, offset int64) (Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stream(id)
	if err != nil {
		return Batch{}, err
	}
	i, ok := slices.BinarySearchFunc(st.batches, offset, func(b Batch, o int64) int { return cmp.Compare(b.Offset, o) })
	if !ok {
		return Batch{}, fmt.Errorf("%w: stream %q offset %d", ErrBatchNotFound, id, offset)
	}
	b := st.batches[i]
	recs := make([][]byte, len(b.Records))
	for j, r := range b.Records {
		recs[j] = slices.Clone(r)
	}
	return Batch{Offset: b.Offset, Records: recs}, nil
}

// Retire implements Store.
func (s *MemoryStore) Retire(_ context.Context, id string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stream(id)
	if err != nil {
		return 0, err
	}
	st.meta.Retired = true
	return st.meta.Watermark, nil
}

// Streams implements Store.
func (s *MemoryStore) Streams(_ context.Context) ([]StreamMeta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrStoreClosed
	}
	out := make([]StreamMeta, 0, len(s.streams))
	for _, st := range s.streams {
		out = append(out, cloneMeta(st.meta))
	}
	slices.SortFunc(out, func(a, b StreamMeta) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Records implements Store.
func (s *MemoryStore) Records(_ context.Context, id string) ([]Batch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.stream(id)
	if err != nil {
		return nil, err
	}
	out := make([]Batch, len(st.batches))
	for i, b := range st.batches {
		recs := make([][]byte, len(b.Records))
		for j, r := range b.Records {
			recs[j] = slices.Clone(r)
		}
		out[i] = Batch{Offset: b.Offset, Records: recs}
	}
	return out, nil
}

// Close implements Store.
func (s *MemoryStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.streams, s.byReq = nil, nil
	s.arena.free()
	return nil
}

func cloneMeta(m StreamMeta) StreamMeta {
	m.Descriptor = slices.Clone(m.Descriptor)
	m.ArrowSchema = slices.Clone(m.ArrowSchema)
	return m
}
