package propertytests

import (
	"testing"

	"pgregory.net/rapid"
)

// The state-machine properties as native fuzz targets: the fuzzer's bytes
// drive rapid's draws.

func FuzzPersistentStateMachine(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) { checkPersistent(t, nil) }))
}

func FuzzEphemeralStateMachine(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(func(t *rapid.T) { checkEphemeral(t, nil) }))
}
