//go:build !linux

package server

// mapChunk maps nothing elsewhere than Linux: the arena takes its chunks
// from the allocator.
func mapChunk(int) []byte { return nil }

// unmapChunk is never called: mapChunk maps nothing.
func unmapChunk([]byte) {}
