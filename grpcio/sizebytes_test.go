package grpcio

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestSizeBytesIsProtowires: the shortcut agrees with protowire.SizeBytes
// on both sides of every varint length boundary.
func TestSizeBytesIsProtowires(t *testing.T) {
	for _, n := range []int{0, 1, 20, 0x7f, 0x80, 0x81, 0x3fff, 0x4000, 1 << 20, 1<<21 - 1, 1 << 21, 10 << 20} {
		if got, want := sizeBytes(n), protowire.SizeBytes(n); got != want {
			t.Errorf("sizeBytes(%d) = %d, want %d", n, got, want)
		}
	}
}
