package server

import (
	"bytes"
	"testing"
)

// The arena returns exact copies, each with its capacity ending with it
// (an append to one cannot overwrite the next), across chunks and for
// records of their own allocation; and free unmaps what it mapped.
func TestArenaCopy(t *testing.T) {
	a := &arena{}
	var in, out [][]byte
	sizes := []int{0, 1, 1000, arenaLarge - 1, arenaLarge, arenaLarge + 1, 3 << 20, 100 << 10}
	for i := range 3 * arenaChunk / (100 << 10) {
		sizes = append(sizes, (i*7919)%(200<<10))
	}
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i + j)
		}
		c := a.copy(b)
		if cap(c) != len(c) {
			t.Fatalf("copy %d: len %d cap %d", i, len(c), cap(c))
		}
		in, out = append(in, b), append(out, c)
	}
	for i := range in {
		if !bytes.Equal(in[i], out[i]) {
			t.Fatalf("copy %d (%d bytes) differs", i, len(in[i]))
		}
	}
	if len(a.mapped) < 2 {
		t.Logf("%d chunks mapped (mapping fails, or not Linux)", len(a.mapped))
	}
	a.free()
	if a.mapped != nil || a.tail != nil {
		t.Fatal("free left chunks")
	}
	a.free() // idempotent
}
