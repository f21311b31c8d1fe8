package bench

import "slices"

// spread summarizes the rounds of one quantity: the median, which one slow
// round on a shared machine does not move, and the range, min to max, which
// shows how far the rounds disagree. Min-max rather than the interquartile
// range: with the handful of rounds a bench makes, quartiles are the
// second-lowest and second-highest rounds at best, and hiding the extremes
// would hide the noise the spread is there to show.
type spread struct {
	Median, Min, Max float64
}

// newSpread summarizes xs (in any order; not modified). The median of an
// even number of rounds is the mean of the two middle ones. No rounds: all
// zero.
func newSpread(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return spread{Median: m, Min: s[0], Max: s[n-1]}
}

// ratios divides a by b round by round (rounds of a and b were measured
// side by side, so each quotient compares like with like); a round where b
// is zero gives zero.
func ratios(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		if b[i] != 0 {
			out[i] = a[i] / b[i]
		}
	}
	return out
}
