//go:build zbstream_plantbugs

package core

// Bug is a deliberate defect for proving that the property tests and the
// simulation catch real bugs. It exists only under the zbstream_plantbugs
// build tag.
type Bug = bug

// The defects PlantBug can switch on.
const (
	// BugAckUpperBound stops bounding acks by the highest sent offset.
	BugAckUpperBound = bugAckUpperBound
	// BugWatermarkCheck stops validating resume watermarks.
	BugWatermarkCheck = bugWatermarkCheck
	// BugDoubleComplete makes reconciliation complete the floor offset again.
	BugDoubleComplete = bugDoubleComplete
	// BugWrapNext computes W+1 without the overflow check.
	BugWrapNext = bugWrapNext
)

type plantedBugs struct{ set bug }

func (p plantedBugs) has(b bug) bool { return p.set&b != 0 }

// PlantBug switches defect b on in m. Only for tests that prove other tests
// can fail.
func PlantBug(m *Machine, b Bug) { m.bugs.set |= b }
