package bench

import (
	"fmt"
	"time"
)

// cell is one line of the table: a record size and a mode, and the
// records/s of each client in every round, in the order measured.
type cell struct {
	Size  int // bytes per record
	Batch int // records per call
	// ZbRates[i] and RawRates[i] were measured side by side in round i.
	ZbRates, RawRates []float64
	// ZbCPU and RawCPU are the client's CPU seconds per record of each
	// round, when the measure took them (where the platform gives a
	// process's CPU time).
	ZbCPU, RawCPU []float64
}

// Mode names the cell's mode as the table shows it.
func (c cell) Mode() string {
	if c.Batch == 1 {
		return "single"
	}
	return fmt.Sprintf("batch %d", c.Batch)
}

// MBps converts records/s to MB/s (10^6 bytes) at the cell's record size.
func (c cell) MBps(recordsPerSec float64) float64 {
	return recordsPerSec * float64(c.Size) / 1e6
}

// Zbstream summarizes the zbstream client's rounds.
func (c cell) Zbstream() spread { return newSpread(c.ZbRates) }

// Raw summarizes the raw client's rounds.
func (c cell) Raw() spread { return newSpread(c.RawRates) }

// Ratio summarizes zbstream over raw round by round: the median of the
// rounds' ratios, not the ratio of the medians, so that each quotient
// compares two runs made under the same load.
func (c cell) Ratio() spread { return newSpread(ratios(c.ZbRates, c.RawRates)) }

// cpuNote is each client's median CPU time per record over the rounds,
// for the line printed after the cell, or "" when it was not measured.
func (c cell) cpuNote() string {
	if len(c.ZbCPU) == 0 || len(c.RawCPU) == 0 {
		return ""
	}
	return fmt.Sprintf("; client CPU a record: zbstream %.2f µs, raw %.2f µs",
		newSpread(c.ZbCPU).Median*1e6, newSpread(c.RawCPU).Median*1e6)
}

// measureFunc measures one client once (zb: zbstream, else raw): calls
// calls, or, for calls 0, for about d.
type measureFunc func(zb bool, calls int64, d time.Duration) (benchMeasure, error)

// roundOrder is the order of the clients in round r (true: zbstream);
// round -1 is the warm-up. The first client alternates (raw, zbstream |
// zbstream, raw | raw, zbstream | ...: ABBA), so that neither is always the
// one that runs right after the other, on a machine whose load drifts.
func roundOrder(r int) [2]bool {
	if r%2 == 0 {
		return [2]bool{true, false}
	}
	return [2]bool{false, true}
}

// measureCell measures both clients in a warm-up and then rounds rounds
// of d each, interleaved (roundOrder), and returns cell with their rates.
// The warm-up of each client, stopped by the clock (see stop),
// estimates its rate and is not counted. Each round then makes as many
// calls as the best rate so far makes in d, like testing.B's b.N, so that
// it lasts about d until its last ack however much a client buffers, and
// runs of both clients are alike in length. logf, when not nil, is told of
// every measurement (round -1: the warm-up) and how long it took in all.
func measureCell(cell cell, rounds int, d time.Duration, measure measureFunc,
	logf func(round int, zb bool, m benchMeasure, took time.Duration)) (cell, error) {
	est := map[bool]float64{}
	warm := max(d/4, min(d, 100*time.Millisecond))
	for r := -1; r < rounds; r++ {
		for _, zb := range roundOrder(r) {
			var calls int64
			dur := d
			if r < 0 {
				dur = warm
			} else {
				calls = max(int64(est[zb]*d.Seconds()/float64(cell.Batch)), 1)
			}
			t0 := time.Now()
			m, err := measure(zb, calls, dur)
			if err != nil {
				return cell, err
			}
			est[zb] = max(est[zb], m.rate())
			if logf != nil {
				logf(r, zb, m, time.Since(t0))
			}
			switch {
			case r < 0:
			case zb:
				cell.ZbRates = append(cell.ZbRates, m.rate())
				if m.cpu > 0 {
					cell.ZbCPU = append(cell.ZbCPU, m.cpuPerRecord())
				}
			default:
				cell.RawRates = append(cell.RawRates, m.rate())
				if m.cpu > 0 {
					cell.RawCPU = append(cell.RawCPU, m.cpuPerRecord())
				}
			}
		}
	}
	return cell, nil
}
