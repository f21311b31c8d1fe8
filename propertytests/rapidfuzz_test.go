package propertytests

import (
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// The state-machine properties as native fuzz targets: the fuzzer's bytes
// drive rapid's draws.

// smFuzzSeeds are starting inputs for the state-machine fuzz targets: rapid
// reads any bytes as a stream of draws, so seeds of a few lengths give the
// fuzzer short and long runs to mutate from.
func smFuzzSeeds(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 16, 64, 256, 1024, 4096} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
}

func FuzzPersistentStateMachine(f *testing.F) {
	smFuzzSeeds(f)
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) { checkPersistent(t, nil) }))
}

func FuzzEphemeralStateMachine(f *testing.F) {
	smFuzzSeeds(f)
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) { checkEphemeral(t, nil) }))
}
