package core

import (
	"math/rand/v2"
	"time"
)

// delay returns the full-jitter delay before reconnect attempt n (1-based):
// uniform in [0, min(Max, Initial*Multiplier^(n-1))], drawn from the
// machine's seeded generator so that a run replays exactly. Every Backoff
// that Validate accepts works, Max = math.MaxInt64 included: the draw's
// bound, the ceiling + 1, is computed in uint64, where it cannot wrap.
func (b Backoff) delay(n int, rng *rand.Rand) time.Duration {
	ceil := float64(b.Initial)
	for i := 1; i < n && ceil < float64(b.Max); i++ {
		ceil *= b.Multiplier
	}
	c := b.Max
	if ceil < float64(b.Max) {
		c = time.Duration(ceil)
	}
	return time.Duration(rng.Uint64N(uint64(c) + 1))
}

// Delay is delay for stream kinds driven outside core (the Arrow Flight
// streams of module arrowstream), so that every stream backs off alike.
func (b Backoff) Delay(n int, rng *rand.Rand) time.Duration { return b.delay(n, rng) }
