package io

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zbstream/zbstream/core"
)

// countedSlab is a slab of bytes over the heap that counts its blocks.
type countedSlab struct {
	slab[byte]
	allocs, frees int
}

func newCountedSlab(size, spare int) *countedSlab {
	c := &countedSlab{}
	c.slab = newSlab(size, spare,
		func(n int) []byte { c.allocs++; return make([]byte, n) },
		func([]byte) { c.frees++ })
	return c
}

// takeFor takes n bytes for offset off, as one ingest call.
func (c *countedSlab) takeFor(t *testing.T, off int64, n int) []byte {
	t.Helper()
	m := c.mark()
	p := c.take(n)
	if len(p) != n || cap(p) != n {
		t.Fatalf("take(%d): len %d cap %d", n, len(p), cap(p))
	}
	c.commit(m, off)
	return p
}

func TestSlabTakesInOrderAndRecyclesWholeBlocks(t *testing.T) {
	s := newCountedSlab(100, 1)
	a := s.takeFor(t, 0, 60)
	b := s.takeFor(t, 1, 60) // does not fit after a: a second block
	c := s.takeFor(t, 2, 30) // fits after b
	if s.allocs != 2 || len(s.blocks) != 2 {
		t.Fatalf("3 calls of 60, 60, 30 in blocks of 100: %d allocations, %d blocks; want 2 and 2", s.allocs, len(s.blocks))
	}
	if &s.blocks[1].buf[0] != &b[0] || &s.blocks[1].buf[60] != &c[0] {
		t.Fatal("a call that fits in the block being filled was not placed right after the last one")
	}
	copy(a, "a")
	s.giveBack(0) // offset 0 durable: the first block holds nothing else
	if len(s.blocks) != 1 || len(s.spare) != 1 {
		t.Fatalf("after offset 0: %d blocks, %d spare; want 1 and 1", len(s.blocks), len(s.spare))
	}
	s.giveBack(1) // the block being filled still holds offset 2
	if len(s.blocks) != 1 || s.blocks[0].used != 90 {
		t.Fatalf("after offset 1: %d blocks, used %d; want the block kept as it is", len(s.blocks), s.blocks[0].used)
	}
	s.giveBack(2) // all durable: the block is filled again from its start
	if len(s.blocks) != 1 || s.blocks[0].used != 0 || s.blocks[0].last != core.NoOffset {
		t.Fatalf("after offset 2: %d blocks, used %d, last %d", len(s.blocks), s.blocks[0].used, s.blocks[0].last)
	}
	s.takeFor(t, 3, 90)
	s.takeFor(t, 4, 90) // the spare block serves this one
	if s.allocs != 2 {
		t.Fatalf("a spare block was there and the slab allocated: %d allocations", s.allocs)
	}
}

func TestSlabCommitMarksOnlyBlocksTheCallUsed(t *testing.T) {
	s := newCountedSlab(100, 4)
	s.takeFor(t, 0, 90)
	m := s.mark()
	s.take(50) // a new block: the first got nothing of this call
	s.commit(m, 1)
	if s.blocks[0].last != 0 || s.blocks[1].last != 1 {
		t.Fatalf("lasts %d and %d, want 0 and 1", s.blocks[0].last, s.blocks[1].last)
	}
	m = s.mark()
	s.take(40) // fits after the 50
	s.take(40) // a third block: this call spans two
	s.commit(m, 2)
	if s.blocks[1].last != 2 || s.blocks[2].last != 2 {
		t.Fatalf("a call spanning blocks 1 and 2: lasts %d and %d, want 2 and 2", s.blocks[1].last, s.blocks[2].last)
	}
	s.giveBack(1) // block 1 holds offset 2 too: only block 0 goes
	if len(s.blocks) != 2 {
		t.Fatalf("after offset 1: %d blocks, want 2", len(s.blocks))
	}
}

func TestSlabUndo(t *testing.T) {
	s := newCountedSlab(100, 4)
	s.takeFor(t, 0, 70)
	m := s.mark()
	s.take(20)
	s.take(50) // a new block
	s.undo(m)
	if len(s.blocks) != 1 || s.blocks[0].used != 70 || len(s.spare) != 1 {
		t.Fatalf("after undo: %d blocks, used %d, %d spare; want 1, 70, 1", len(s.blocks), s.blocks[0].used, len(s.spare))
	}
	m = s.mark()
	s.take(10)
	s.undo(m)
	if s.blocks[0].used != 70 {
		t.Fatalf("undo within a block: used %d, want 70", s.blocks[0].used)
	}
	empty := newCountedSlab(100, 0)
	m = empty.mark()
	empty.take(10)
	empty.undo(m)
	if len(empty.blocks) != 0 || empty.frees != 1 {
		t.Fatalf("undo on an empty slab with no spare room: %d blocks, %d frees", len(empty.blocks), empty.frees)
	}
}

func TestSlabLargeCallsAndSpareBound(t *testing.T) {
	s := newCountedSlab(100, 1)
	s.takeFor(t, 0, 250) // larger than a block: one of its own
	s.takeFor(t, 1, 10)  // does not fit in the large one's nothing left
	s.takeFor(t, 2, 100)
	s.takeFor(t, 3, 100)
	if len(s.blocks) != 4 || len(s.blocks[0].buf) != 250 {
		t.Fatalf("%d blocks, the first of %d; want 4, the first of 250", len(s.blocks), len(s.blocks[0].buf))
	}
	s.giveBack(3)
	// The large block is freed, not kept; one standard block is kept
	// spare, one is freed, and the last stays as the block being filled.
	if s.frees != 2 || len(s.spare) != 1 || len(s.blocks) != 1 {
		t.Fatalf("after everything is durable: %d frees, %d spare, %d blocks; want 2, 1, 1", s.frees, len(s.spare), len(s.blocks))
	}
	s.freeAll()
	if s.frees != s.allocs {
		t.Fatalf("freeAll: %d frees for %d allocations", s.frees, s.allocs)
	}
}

func TestSlabLargeBlockBeingFilledIsFreed(t *testing.T) {
	s := newCountedSlab(100, 4)
	s.takeFor(t, 0, 500)
	s.giveBack(0)
	if len(s.blocks) != 0 || s.frees != 1 {
		t.Fatalf("a large block, all durable: %d blocks left, %d frees; want it freed", len(s.blocks), s.frees)
	}
}

func TestArenaCopies(t *testing.T) {
	a := newRecordArena(64 << 20)
	defer a.free()
	if a.bytes.size != arenaMaxBlock {
		t.Fatalf("block size for a 64 MiB bound: %d", a.bytes.size)
	}
	if small := newRecordArena(1 << 20); small.bytes.size != arenaMinBlock {
		t.Fatalf("block size for a 1 MiB bound: %d", small.bytes.size)
	}
	m := a.mark()
	rec := []byte("record")
	batch := [][]byte{[]byte("one"), {}, []byte("three")}
	c := a.copyRecord(rec)
	b := copyBatch(a, batch)
	a.settle(m, 0, nil)
	rec[0], batch[0][0], batch[2] = 'X', 'X', nil
	if string(c) != "record" || string(b[0]) != "one" || len(b[1]) != 0 || b[1] == nil || string(b[2]) != "three" {
		t.Fatalf("copies changed with the originals: %q %q", c, b)
	}
	m = a.mark()
	a.copyRecord([]byte("refused"))
	a.settle(m, core.NoOffset, core.ErrWindowFull)
	if a.bytes.blocks[0].used != len("record")+2+len("one")+2+2+len("three") { // each batch record framed
		t.Fatalf("a refused call kept its bytes: used %d", a.bytes.blocks[0].used)
	}
}

// TestSlabLargeCallAfterFullDrain: the block kept after everything became
// durable, still empty when the next call needs a block of its own, does
// not hold back the blocks after it.
func TestSlabLargeCallAfterFullDrain(t *testing.T) {
	s := newCountedSlab(100, 1)
	s.takeFor(t, 0, 10)
	s.giveBack(0) // the block is kept, empty
	s.takeFor(t, 1, 500)
	for off := int64(2); off < 10; off++ {
		s.takeFor(t, off, 100)
		s.giveBack(off)
	}
	if len(s.blocks) != 1 || s.frees != 1 {
		t.Fatalf("everything durable: %d blocks held, %d freed; want 1 held and the large one freed", len(s.blocks), s.frees)
	}
}

// TestArenaKeepsFreedBlocksUpToTheBound: blocks that one ack makes
// durable together are all kept and filled again, none unmapped and
// mapped afresh (a page fault a page), as long as they are within the
// in-flight bound.
func TestArenaKeepsFreedBlocksUpToTheBound(t *testing.T) {
	const bound = 8 << 20
	a := newRecordArena(bound)
	defer a.free()
	rec := make([]byte, 10<<10)
	fill := func(from int64) map[*byte]bool {
		bufs := map[*byte]bool{}
		for off := from; off < from+bound/int64(len(rec)); off++ {
			m := a.mark()
			a.copyRecord(rec)
			a.settle(m, off, nil)
			for _, b := range a.bytes.blocks {
				bufs[&b.buf[0]] = true
			}
		}
		return bufs
	}
	first := fill(0)
	a.giveBack(bound/int64(len(rec)) - 1) // one ack: everything durable
	if kept := len(a.bytes.spare) + len(a.bytes.blocks); kept != len(first) {
		t.Fatalf("after one ack made all %d blocks durable, %d are kept", len(first), kept)
	}
	second := fill(bound / int64(len(rec)))
	for b := range second {
		if !first[b] {
			t.Fatalf("a block was mapped afresh while %d freed ones were kept", len(first))
		}
	}
}

// TestArenaBatchSurvivesCollections: a batch's headers live in a mapping
// the collector does not scan; what they point to is kept by the arena,
// so collections change nothing in the copy.
func TestArenaBatchSurvivesCollections(t *testing.T) {
	a := newRecordArena(64 << 20)
	defer a.free()
	records := make([][]byte, 5000) // more than a block of headers
	for i := range records {
		records[i] = []byte(fmt.Sprintf(`{"i":%d}`, i))
	}
	records[7] = []byte{}
	m := a.mark()
	b := copyBatch(a, records)
	a.settle(m, 0, nil)
	for range 3 {
		runtime.GC()
	}
	for i, r := range b {
		if string(r) != string(records[i]) || (i == 7 && r == nil) {
			t.Fatalf("record %d after collections: %q, want %q", i, r, records[i])
		}
	}
}

// copyBatch copies records into a as ingest does, with their size as sent.
func copyBatch(a *recordArena, records [][]byte) [][]byte {
	_, framed := core.BatchSizes(records)
	return a.copyBatch(records, int(framed))
}

// TestArenaBatchLargerThanABlock: a batch whose size as sent exceeds a block is
// copied record by record, across blocks, each record whole.
func TestArenaBatchLargerThanABlock(t *testing.T) {
	a := newRecordArena(1 << 20) // 64 KiB blocks
	defer a.free()
	records := make([][]byte, 10)
	for i := range records {
		records[i] = bytes.Repeat([]byte{byte('a' + i)}, 10<<10)
	}
	m := a.mark()
	b := copyBatch(a, records)
	a.settle(m, 0, nil)
	if len(a.bytes.blocks) < 2 {
		t.Fatalf("a %d KiB batch in %d block(s) of %d KiB", 100, len(a.bytes.blocks), a.bytes.size>>10)
	}
	for i := range records {
		if !bytes.Equal(b[i], records[i]) || cap(b[i]) != len(b[i]) {
			t.Fatalf("record %d: %d bytes, cap %d, equal %v", i, len(b[i]), cap(b[i]), bytes.Equal(b[i], records[i]))
		}
	}
}

// TestRecordCostCoversWhatARecordKeeps: RecordCost, which the byte bound
// charges each record (docs/protocol.md, 5.6), covers what the arena keeps
// for a record beside its bytes: its slice header and, in a batch taken
// whole, its framing, at most that of a record as large as a block.
func TestRecordCostCoversWhatARecordKeeps(t *testing.T) {
	header := int(unsafe.Sizeof([]byte(nil)))
	frame := putFrame(make([]byte, binary.MaxVarintLen64+1), arenaMaxBlock)
	if header+frame > RecordCost {
		t.Fatalf("a record keeps a %d-byte header and up to %d bytes of framing; RecordCost is %d", header, frame, RecordCost)
	}
}

// TestArenaFramesABatch: a batch taken whole is laid out as the batch
// message's record list (framedBatch), each record after its tag and
// length, and its copies point into that layout; a batch larger than a
// block has no such layout.
func TestArenaFramesABatch(t *testing.T) {
	a := newRecordArena(1 << 20) // 64 KiB blocks
	defer a.free()
	records := [][]byte{{}, []byte("x"), bytes.Repeat([]byte("a"), 127), bytes.Repeat([]byte("b"), 128), bytes.Repeat([]byte("c"), 20_000)}
	m := a.mark()
	b := copyBatch(a, records)
	a.settle(m, 0, nil)
	framed := a.framedBatch(b)
	if int64(len(framed)) != core.CallSize(records) {
		t.Fatalf("framed batch of %d bytes, want %d", len(framed), core.CallSize(records))
	}
	rest := framed
	for i, r := range records {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			t.Fatalf("record %d: tag %d/%d (%d), want field 1, bytes", i, num, typ, n)
		}
		rest = rest[n:]
		v, n := protowire.ConsumeBytes(rest)
		if n < 0 || !bytes.Equal(v, r) {
			t.Fatalf("record %d: framed as %d bytes (%d), want %d", i, len(v), n, len(r))
		}
		if len(r) > 0 && &v[0] != &b[i][0] || len(b[i]) != len(r) {
			t.Fatalf("record %d: the copy does not point into the framed batch", i)
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes after the last record", len(rest))
	}

	large := make([][]byte, 4)
	for i := range large {
		large[i] = bytes.Repeat([]byte{'d'}, 20_000)
	}
	m = a.mark()
	b = copyBatch(a, large)
	a.settle(m, 1, nil)
	if f := a.framedBatch(b); f != nil {
		t.Fatalf("a batch larger than a block, copied record by record, framed as %d bytes", len(f))
	}
	buf := []byte(`{"a":1}{"b":2}`) // records side by side, without framing
	if f := a.framedBatch([][]byte{buf[:7:7], buf[7:]}); f != nil {
		t.Fatalf("records not laid out by copyBatch taken as a framed batch of %d bytes", len(f))
	}
}

// TestFramedBatchKnowsOnlyTheLastBatchTakenWhole: framedBatch takes the
// size of the batch copyBatch framed last from a memo rather than summing
// it again. A batch refused after its copy gives its header slots and bytes
// back, and the next batch takes the same ones: here one larger than a
// block, copied record by record, whose two records lie side by side
// exactly as far apart as the refused batch's memo would have them.
// Framing it from that memo would start before its first record, outside
// its block; it has no framing, and framedBatch must say so. A batch that
// is no longer the last one taken is framed as before.
func TestFramedBatchKnowsOnlyTheLastBatchTakenWhole(t *testing.T) {
	a := newRecordArena(1 << 20) // 64 KiB blocks
	defer a.free()
	rec := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }

	// 30,004 + 35,530 = 65,534 bytes as sent: one block, framed.
	refused := [][]byte{rec(30_000, 'a'), rec(35_526, 'b')}
	m := a.mark()
	copyBatch(a, refused)
	a.settle(m, core.NoOffset, errors.New("refused"))

	// 30,004 + 35,534 = 65,538 bytes as sent: over a block, so copied
	// record by record, from the start of the block the refused batch
	// gave back: 65,530 bytes side by side.
	large := [][]byte{rec(30_000, 'c'), rec(35_530, 'd')}
	m = a.mark()
	b := copyBatch(a, large)
	a.settle(m, 0, nil)
	if f := a.framedBatch(b); f != nil {
		t.Fatalf("a batch copied record by record framed as %d bytes", len(f))
	}

	first, second := [][]byte{rec(10, 'k'), rec(300, 'l')}, [][]byte{rec(5, 'm'), rec(7, 'n')}
	var taken [2][][]byte
	for i, recs := range [][][]byte{first, second} {
		m = a.mark()
		taken[i] = copyBatch(a, recs)
		a.settle(m, int64(1+i), nil)
	}
	for i, recs := range [][][]byte{first, second} {
		f := a.framedBatch(taken[i])
		want := slices.Concat(framing(len(recs[0])), recs[0], framing(len(recs[1])), recs[1])
		if !bytes.Equal(f, want) {
			t.Fatalf("batch %d framed as %q, want %q", i, f, want)
		}
	}
}

// framing is a batch record's tag and length, as putFrame writes them.
func framing(n int) []byte {
	p := make([]byte, binary.MaxVarintLen64+1)
	return p[:putFrame(p, n)]
}
