//go:build !race

package ingest

// raceScale is 1 under the race detector, which makes these tests' runs
// about ten times slower: the biggest of them ingest less.
const raceScale = 0
