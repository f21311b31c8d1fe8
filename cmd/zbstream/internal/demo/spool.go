package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
)

// spoolScore is what the -spool demo's orchestrator learns from its client
// processes.
type spoolScore struct {
	mu       sync.Mutex
	returned map[int]spoolCall // by first source record: calls that returned
	inflight map[int]int       // by first source record: taken, not returned (yet)
	retRecs  int               // records in returned calls
	taken    int               // source position after the last batch taken
	resent   int64
	dropped  int64
	torn     int64
	procs    int
}

type spoolCall struct {
	n   int
	off int64
}

// runSpool is the demo's -spool mode: the client ingests through a spool,
// is killed with SIGKILL at random points and restarted, and the source is
// never replayed: a new client only reopens the spool and takes the source
// batches after the last one any client took. Verification is over the
// calls that returned (each lands exactly once, at its offset); records
// of calls a kill interrupted are reported apart (each lands at most once).
func (d *demo) runSpool(ctx context.Context) error {
	fmt.Fprintf(d.out, "zbstream demo -spool: %d records of %d B in calls of %d from %d goroutines, faults about every %d calls, %d server kill(s), %d client kill(s); the source is never replayed\n",
		d.cfg.Records, d.cfg.RecordSize, d.cfg.Batch, d.cfg.Goroutines, d.cfg.FaultEvery, d.cfg.KillServer, d.cfg.KillClient)
	if err := d.startServer(ctx); err != nil {
		return err
	}
	defer func() { d.server.abandon() }()
	fmt.Fprintf(d.out, "server: %s (bolt engine in %s, strict duplicates on); client spool in %s\n", d.cfg.Addr, d.cfg.DataDir, spoolDir(d.cfg))
	id, err := d.createStream(ctx)
	if err != nil {
		return err
	}
	d.cfg.StreamID = id
	fmt.Fprintf(d.out, "created persistent stream %s; the first client adopts it into its spool\n", id)

	sc := &spoolScore{returned: map[int]spoolCall{}, inflight: map[int]int{}}
	stop := d.spoolProgress(sc)
	defer stop()
	rng := rand.New(rand.NewPCG(d.cfg.Seed, uint64(time.Now().UnixNano())))
	serverKills, clientKills := 0, 0
	for {
		sc.mu.Lock()
		before := len(sc.inflight)
		sc.mu.Unlock()
		done, err := d.runSpoolClient(ctx, sc, rng, &serverKills, &clientKills)
		if err != nil {
			return err
		}
		if done {
			break
		}
		d.count("client SIGKILL")
		sc.mu.Lock()
		fmt.Fprintf(d.out, "  client process killed with SIGKILL with %d calls in flight; a new process reopens the spool and takes the source from %d\n",
			len(sc.inflight)-before, sc.taken)
		d.cfg.StartAt = sc.taken
		sc.mu.Unlock()
	}
	stop()
	elapsed := time.Since(d.start)
	if err := d.server.stop(); err != nil {
		return fmt.Errorf("stopping the server: %w", err)
	}
	var p readProgress
	stopVerify := d.verifyProgress(&p)
	v, err := verifySpool(ctx, d.cfg, sc, &p)
	stopVerify()
	if err != nil {
		return err
	}
	return d.spoolSummary(sc, v, elapsed)
}

// runSpoolClient runs one client process until it finishes (true) or is
// killed on plan (false).
func (d *demo) runSpoolClient(ctx context.Context, sc *spoolScore, rng *rand.Rand, serverKills, clientKills *int) (bool, error) {
	c, err := d.spawn(ctx, "client")
	if err != nil {
		return false, err
	}
	defer c.abandon()
	sc.mu.Lock()
	sc.procs++
	sc.mu.Unlock()
	killServerAt := int(float64(d.cfg.Records) * 0.6 * float64(*serverKills+1) / float64(d.cfg.KillServer+1))
	killClientAt := int(float64(d.cfg.Records) * (0.1 + 0.8*float64(*clientKills+1)/float64(d.cfg.KillClient+1)))
	killing := false
	for line := range c.lines {
		f := strings.Fields(line)
		nums := make([]int64, len(f))
		for i := 1; i < len(f); i++ {
			nums[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		sc.mu.Lock()
		switch {
		case f[0] == "opened" && len(f) == 4:
			sc.resent += nums[1]
			sc.dropped += nums[2]
			sc.torn += nums[3]
		case f[0] == "take" && len(f) == 3:
			sc.inflight[int(nums[1])] = int(nums[2])
			sc.taken = int(nums[1] + nums[2])
		case f[0] == "ret" && len(f) == 4:
			delete(sc.inflight, int(nums[1]))
			sc.returned[int(nums[1])] = spoolCall{n: int(nums[2]), off: nums[3]}
			sc.retRecs += int(nums[2])
		case line == "done":
			sc.mu.Unlock()
			return true, c.wait()
		default:
			sc.mu.Unlock()
			return false, fmt.Errorf("client says %q", line)
		}
		ret := sc.retRecs
		sc.mu.Unlock()
		if *serverKills < d.cfg.KillServer && ret >= killServerAt {
			*serverKills++
			if err := d.restartServer(ctx); err != nil {
				return false, err
			}
		}
		if !killing && *clientKills < d.cfg.KillClient && ret >= killClientAt {
			// A random point: up to 30 ms later, anywhere in the
			// write, fsync, hand-off and return of the calls.
			killing = true
			*clientKills++
			time.AfterFunc(time.Duration(rng.IntN(30_000))*time.Microsecond, c.kill)
		}
	}
	err = c.wait()
	if killing {
		return false, nil
	}
	if err == nil {
		err = errors.New("ended without finishing")
	}
	return false, fmt.Errorf("client process: %w\n%s", err, c.stderr.String())
}

// spoolProgress prints a progress line every second until stopped.
func (d *demo) spoolProgress(sc *spoolScore) func() {
	return cli.Every(time.Second, func() {
		sc.mu.Lock()
		ret := sc.retRecs
		sc.mu.Unlock()
		d.progressLine("returned", ret)
	})
}
