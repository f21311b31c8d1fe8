//go:build !zbstream_plantbugs

package core

// plantedBugs is empty outside the zbstream_plantbugs build.
type plantedBugs struct{}

func (plantedBugs) has(bug) bool { return false }
