//go:build race

package boundarytest

// raceDetector: this binary runs under the race detector.
const raceDetector = true
