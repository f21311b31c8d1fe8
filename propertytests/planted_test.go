//go:build zbstream_plantbugs

package propertytests

import (
	"flag"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/zbstream/zbstream/core"
	"pgregory.net/rapid"
)

// TestPlantedBugsAreCaught proves that the properties and the simulation can
// fail: it plants each known defect in the core (through the
// zbstream_plantbugs build, the only build where core.PlantBug exists) and
// asserts that at least one of them catches it. Run it with
//
//	go test -tags zbstream_plantbugs ./propertytests -run TestPlantedBugsAreCaught -v
func TestPlantedBugsAreCaught(t *testing.T) {
	// A planted failure must not leave rapid fail files in testdata.
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		t.Fatal(err)
	}
	bugs := []struct {
		name string
		bug  core.Bug
		// lies are the hostile-server runs that expose the bug; a plain
		// faulty-network run (simNoLie) is always tried too.
		lies []simLie
	}{
		{"ack upper bound dropped", core.BugAckUpperBound, []simLie{simLieOverAck}},
		{"watermark validation skipped", core.BugWatermarkCheck, []simLie{simLieWatermarkAbove, simLieWatermarkBelow}},
		{"reconciled record completed twice", core.BugDoubleComplete, nil},
		{"W+1 wraps", core.BugWrapNext, []simLie{simLieWatermarkMax}},
	}
	for _, b := range bugs {
		t.Run(b.name, func(t *testing.T) {
			plant := func(m *core.Machine) { core.PlantBug(m, b.bug) }
			var caught []string
			for name, check := range map[string]func(*rapid.T, func(*core.Machine)){
				"persistent state machine": checkPersistent,
				"ephemeral state machine":  checkEphemeral,
				"overflow property":        checkOverflow,
				"persistent differential":  func(rt *rapid.T, p func(*core.Machine)) { checkDifferential(rt, core.Persistent, p) },
				"ephemeral differential":   func(rt *rapid.T, p func(*core.Machine)) { checkDifferential(rt, core.Ephemeral, p) },
			} {
				rec := &failRecorder{TB: t}
				rapid.Check(rec, func(rt *rapid.T) { check(rt, plant) })
				if rec.failed() {
					caught = append(caught, name)
				}
			}
			for i, seed := range fzEventSeeds() {
				rec := &failRecorder{TB: t}
				fuzzEventsWith(rec, seed, plant)
				if rec.failed() {
					caught = append(caught, fmt.Sprintf("event-sequence fuzz seed %d", i))
					break
				}
			}
			for _, lie := range append([]simLie{simNoLie}, b.lies...) {
				for seed := uint64(1); seed <= 20; seed++ {
					if _, err := simRun(seed, simConfig{Steps: 120, Lie: lie}, plant); err != nil {
						caught = append(caught, fmt.Sprintf("simulation (%s, seed %d)", lie, seed))
						break
					}
				}
			}
			if len(caught) == 0 {
				t.Fatalf("planted bug %q was caught by nothing", b.name)
			}
			slices.Sort(caught)
			t.Logf("caught by: %v", caught)
		})
	}
}

// failRecorder is a rapid.TB that records a falsified property instead of
// failing the test, so a test can assert that a property does fail.
type failRecorder struct {
	testing.TB
	mu  sync.Mutex
	bad bool
}

func (r *failRecorder) mark() {
	r.mu.Lock()
	r.bad = true
	r.mu.Unlock()
}

func (r *failRecorder) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

func (r *failRecorder) Errorf(string, ...any) { r.mark() }
func (r *failRecorder) Error(...any)          { r.mark() }
func (r *failRecorder) Fatalf(string, ...any) { r.mark() }
func (r *failRecorder) Fatal(...any)          { r.mark() }
func (r *failRecorder) FailNow()              { r.mark() }
func (r *failRecorder) Fail()                 { r.mark() }
func (r *failRecorder) Failed() bool          { return r.failed() }
func (r *failRecorder) Logf(string, ...any)   {}
func (r *failRecorder) Log(...any)            {}
