//go:build unix

package ingest

import (
	"errors"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// TestIngestArrowKill: a real "zbstream ingest -format parquet" process
// is killed with SIGKILL once its progress shows a third of the rows
// durable, with batches in flight (the server holds every ack back a
// little, so that the run lasts). A rerun of the same command skips the
// rows the state file recorded durable and sends exactly the others: the
// server received, on the rerun's stream, the file's rows less those, and
// holds every row; the rows recorded durable before the kill are stored
// once, the rows after them at least once (those in flight at the kill,
// twice: at least once, as documented). A third run sends nothing.
func TestIngestArrowKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	ts := servertest.Start(t)
	ts.Inject(server.Match{}, server.Fault{Kind: server.FaultDelayAcks, Delay: 3 * time.Millisecond, Times: server.Unlimited})
	const rows = 200_000
	file := tempFile(t, "kill.parquet")
	writeParquet(t, file, rows, 50_000)
	args := append(serverArgs(ts), "-format", "parquet", "-batch-size", "250", "-max-inflight", "4", "-progress", "10ms", file)

	killedAt := int64(-1)
	out, errOut, err := runIngestChild(t, args, func(cmd *exec.Cmd, durable int64) bool {
		if durable >= rows/3 && durable < rows {
			killedAt = durable
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("kill: %v", err)
			}
			return true
		}
		return false
	})
	var ee *exec.ExitError
	if killedAt < 0 || !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed mid-way (exit %v)\n%s%s", err, out, errOut)
	}
	st, err := loadArrowState(file + ".zbstate")
	if err != nil || st == nil || st.Done {
		t.Fatalf("state after the kill: %+v, %v", st, err)
	}
	durable := st.DurableRows
	t.Logf("killed at %d rows durable by its progress; the state file says %d", killedAt, durable)
	if durable <= 0 || durable%250 != 0 {
		t.Fatalf("the state file says %d rows durable: want some, whole batches of 250", durable)
	}
	before := map[string]bool{}
	for _, id := range arrowStreams(t, ts) {
		before[id] = true
	}

	code, out2, _ := runIngestCmd(testContext(t, time.Minute), t, args...)
	if code != cli.ExitOK {
		t.Fatalf("rerun: exit %d", code)
	}
	wantIn(t, "the rerun", out2, "sent "+strconv.FormatInt(rows-durable, 10)+" rows", "("+strconv.FormatInt(durable, 10)+" rows durable before it)")
	var rerun []string
	all := arrowStreams(t, ts)
	for _, id := range all {
		if !before[id] {
			rerun = append(rerun, id)
		}
	}
	if got := receivedRows(t, ts, rerun); got != rows-durable {
		t.Fatalf("the rerun's streams received %d rows, want the %d the state file did not record durable", got, rows-durable)
	}
	counts := make([]int, rows)
	eachStoredID(t, ts, rerun, func(id int64) {
		if id < durable {
			t.Fatalf("the rerun sent row %d, which the state file recorded durable (%d rows)", id, durable)
		}
		counts[id]++
	})
	twice := 0
	eachStoredID(t, ts, slices.Collect(maps.Keys(before)), func(id int64) { counts[id]++ })
	for id, n := range counts {
		switch {
		case n == 0:
			t.Fatalf("row %d never landed", id)
		case n > 1 && int64(id) < durable:
			t.Fatalf("row %d, recorded durable before the kill, is stored %d times", id, n)
		case n > 1:
			twice++
		}
	}
	t.Logf("%d rows stored twice: in flight at the kill, after the %d recorded durable", twice, durable)

	code, out3, _ := runIngestCmd(testContext(t, time.Minute), t, args...)
	if code != cli.ExitOK || len(arrowStreams(t, ts)) != len(all) {
		t.Fatalf("third run: exit %d; want 0 and no new stream", code)
	}
	wantIn(t, "the third run", out3, "is already done", "nothing sent")
}
