package core

// bug names a deliberate defect that the property tests must catch. The
// switch exists only under the zbstream_plantbugs build tag (bugs_on.go);
// in every other build plantedBugs.has is the constant false and the checks
// below compile away.
type bug uint8

const (
	bugAckUpperBound  bug = 1 << iota // acks are not bounded by the highest sent offset
	bugWatermarkCheck                 // resume watermarks are not validated
	bugDoubleComplete                 // reconciliation completes the floor offset again
	bugWrapNext                       // W+1 is computed without the overflow check
)
