package io

import (
	"bytes"
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

// copyFor copies one record into a as an ingest call accepted at off, and
// returns the copy and its loan (nil: not in lendable memory).
func copyFor(a *recordArena, off int64, r []byte) ([]byte, *Loan) {
	m := a.mark()
	c := a.copyRecord(r)
	a.settle(m, off, nil)
	return c, a.loan(c)
}

// TestArenaLendsWithinLendBytes: while the connection borrows, calls of
// LendMin bytes or more go to lendable memory, up to LendBytes of blocks;
// the next ones go to the arena's own until acks free a lent block. Smaller
// calls, and every call while the connection does not borrow, are never
// lent.
func TestArenaLendsWithinLendBytes(t *testing.T) {
	a := newRecordArena(64 << 20)
	defer a.free()
	rec := bytes.Repeat([]byte("r"), a.bytes.size/2+1) // one a block
	if _, loan := copyFor(a, 0, rec); loan != nil {
		t.Fatal("lent while the connection does not borrow")
	}
	a.lend = true
	if _, loan := copyFor(a, 1, make([]byte, LendMin-1)); loan != nil {
		t.Fatalf("a call of %d bytes lent (LendMin %d)", LendMin-1, LendMin)
	}
	if _, loan := copyFor(a, 2, make([]byte, LendMin)); loan == nil {
		t.Fatalf("a call of LendMin bytes not lent")
	}
	limit := LendBytes / a.bytes.size
	off := int64(3)
	for lent := 0; ; lent++ {
		_, loan := copyFor(a, off, rec)
		off++
		if loan != nil {
			if lent > 4*limit {
				t.Fatalf("%d calls lent: no bound", lent)
			}
			continue
		}
		if lent < limit-1 || len(a.lent.blocks) != limit {
			t.Fatalf("after %d calls of half a block lent, in %d blocks, one was not: want %d blocks (LendBytes)", lent, len(a.lent.blocks), limit)
		}
		break
	}
	a.giveBack(off)
	if c, loan := copyFor(a, off+1, rec); loan == nil || !bytes.Equal(c, rec) {
		t.Fatal("not lent again once acks freed the lent blocks")
	}
	if got := len(a.lent.blocks) + len(a.lent.spare); got > limit {
		t.Fatalf("%d lent blocks kept, more than LendBytes' %d", got, limit)
	}
}

// TestArenaLendsAFramedBatch: a batch taken whole in lendable memory lends
// its framed record list; one copied record by record is not lent.
func TestArenaLendsAFramedBatch(t *testing.T) {
	a := newRecordArena(64 << 20)
	defer a.free()
	a.lend = true
	batch := [][]byte{bytes.Repeat([]byte("a"), LendMin), []byte("b")}
	m := a.mark()
	b := copyBatch(a, batch)
	a.settle(m, 0, nil)
	framed := a.framedBatch(b)
	if framed == nil || a.loan(framed) == nil {
		t.Fatal("a framed batch of LendMin bytes or more is not lent")
	}
	before := a.lent.mark()
	m = a.mark()
	copyBatch(a, [][]byte{make([]byte, LendMin-2)}) // framed: LendMin+1 bytes
	a.settle(m, 1, nil)
	if after := a.lent.mark(); after != before {
		t.Fatal("a one-record batch under LendMin took lendable memory (it is sent as a single record, never lent)")
	}
	large := [][]byte{make([]byte, a.bytes.size/2+LendMin), make([]byte, a.bytes.size/2+LendMin)}
	m = a.mark()
	b = copyBatch(a, large)
	a.settle(m, 2, nil)
	if a.framedBatch(b) != nil || a.loan(b[0]) != nil {
		t.Fatal("a batch copied record by record is lent")
	}
}

// TestBorrowedMemoryIsNeverWrittenAgain: a lent block whose payload a
// transport still holds is not reused once its calls are durable, however
// many calls follow: the holder reads what was sent. Once every borrow is
// returned, blocks are reused.
func TestBorrowedMemoryIsNeverWrittenAgain(t *testing.T) {
	a := newRecordArena(64 << 20)
	defer a.free()
	a.lend = true
	held, loan := copyFor(a, 0, bytes.Repeat([]byte("h"), LendMin))
	if loan == nil {
		t.Fatal("not lent")
	}
	loan.Borrow() // a transport hands it on and never gives it back
	want := bytes.Clone(held)
	rec := bytes.Repeat([]byte("n"), 64<<10)
	for off := int64(1); off < 1000; off++ { // some 60 MiB through 4 MiB
		c, l := copyFor(a, off, rec)
		if l != nil {
			l.Borrow()
			l.Return()
		}
		a.giveBack(off)
		if &c[0] == &held[0] {
			t.Fatalf("offset %d took the borrowed memory", off)
		}
	}
	if !bytes.Equal(held, want) {
		t.Fatal("the borrowed payload was written over")
	}
	reused := 0
	seen := map[*byte]bool{}
	for off := int64(1000); off < 1200; off++ {
		c, _ := copyFor(a, off, rec)
		a.giveBack(off)
		if seen[&c[0]] {
			reused++
		}
		seen[&c[0]] = true
	}
	if reused == 0 {
		t.Fatal("lent blocks whose borrows all came back are not reused")
	}
}

// TestHeaderSlotsKeepNoStalePointers: batch headers live in mapped memory
// the collector does not scan; a slot given back and written again must
// not still point into a block of record bytes freed since (here lent
// blocks dropped because a borrow never came back). Without the slots
// cleared, the write barrier of the next store into them, during a
// collection's mark phase, finds a pointer into no live object and the
// runtime throws ("found bad pointer in Go heap"): it did so within a few
// hundred batches here.
func TestHeaderSlotsKeepNoStalePointers(t *testing.T) {
	a := newRecordArena(64 << 20)
	defer a.free()
	a.lend = true
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // collections back to back, so that stores meet a mark phase
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	batch := [][]byte{make([]byte, LendMin), []byte("x")}
	for off := int64(0); off < 5000; off++ {
		m := a.mark()
		b := copyBatch(a, batch)
		a.settle(m, off, nil)
		if l := a.loan(a.framedBatch(b)); l != nil {
			l.Borrow() // never returned: its block is dropped once durable
		}
		a.giveBack(off)
		for _, blk := range slices.Concat(a.headers.blocks, a.headers.spare) {
			for i, h := range blk.buf[blk.used:] {
				if h != nil {
					t.Fatalf("offset %d: header slot %d, given back, still points at %p", off, blk.used+i, unsafe.SliceData(h))
				}
			}
		}
	}
}

// TestLentMemoryStaysWithinLendBytes: a one-record batch is lent by its
// record's size but takes its framed size; at the limit, a lent block with
// room for the record and not for its framing sends the batch to the
// arena's own memory rather than open a block beyond LendBytes.
func TestLentMemoryStaysWithinLendBytes(t *testing.T) {
	a := newRecordArena(64 << 20)
	defer a.free()
	a.lend = true
	limit := LendBytes / a.bytes.size
	rec := make([]byte, LendMin)
	off := int64(0)
	for range limit - 1 {
		copyFor(a, off, make([]byte, a.bytes.size))
		off++
	}
	copyFor(a, off, make([]byte, a.bytes.size-len(rec)-1)) // the last block: room for rec and one byte
	off++
	if len(a.lent.blocks) != limit {
		t.Fatalf("%d lent blocks, want %d", len(a.lent.blocks), limit)
	}
	m := a.mark()
	copyBatch(a, [][]byte{rec}) // framed: LendMin+3 bytes
	a.settle(m, off, nil)
	if len(a.lent.blocks) > limit {
		t.Fatalf("%d lent blocks after a one-record batch at the limit: LendBytes allows %d", len(a.lent.blocks), limit)
	}
}
