// Package testseed gives randomized tests their seed: a fresh one per run,
// logged with the environment variable that replays it.
package testseed

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Seed returns the seed of this run: env's value when it is set (a run
// replayed), else a fresh one. It logs "ENV=SEED" so that a failing run
// can be replayed, and fails the test on a value that is not a uint64.
func Seed(t testing.TB, env string) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(env); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", env, v, err)
		}
	}
	t.Logf("%s=%d", env, seed)
	return seed
}
