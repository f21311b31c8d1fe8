package boundarytest

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/net/trace"

	"github.com/zbstream/zbstream/server/servertest"
)

// family is the trace family gRPC files the client's calls under:
// "grpc.Sent." and the service's full name (what travels on the wire).
const family = "grpc.Sent.databricks.zerobus.Zerobus"

// render renders the buckets of the client's trace family, expanded, as
// /debug/requests does: that is when gRPC formats the messages it kept. It
// returns how many sent messages the pages showed.
//
// Bucket -1 holds the calls still running. x/net/trace renders their event
// lists without the lock under which gRPC's LazyLog appends to them, a
// race of its own that the race detector reports whatever the messages
// are; under the detector, the running calls are rendered only once they
// have completed (every dropped connection completes one).
func render(t *testing.T) int {
	shown, first := 0, -1 // -1: running calls; 0-8: completed ones by latency
	if raceDetector {
		first = 0
	}
	for b := first; b < 9; b++ {
		req, err := http.NewRequest("GET", fmt.Sprintf("/debug/requests?fam=%s&b=%d&exp=1", family, b), nil)
		if err != nil {
			t.Error(err)
			return shown
		}
		var page strings.Builder
		trace.Render(&page, req, true)
		shown += strings.Count(page.String(), "sent: ")
	}
	return shown
}

// TestTracingRendersKeptMessages renders /debug/requests over and over
// while streams send, drop, resend and complete records smaller and larger
// than an arena block, and again once every stream is closed and its memory
// given back. gRPC's tracing keeps every message it sent and formats it
// only then: a message that pointed into the stream's record memory crashed
// the process here ("unexpected fault address"), and one reused for the
// next call raced with the renderer under -race.
func TestTracingRendersKeptMessages(t *testing.T) {
	for _, noCopy := range []bool{false, true} {
		t.Run(fmt.Sprintf("noCopy=%v", noCopy), func(t *testing.T) {
			ts := servertest.Start(t)
			w := workload{noCopy: noCopy, during: func(stop <-chan struct{}) {
				for {
					select {
					case <-stop:
						return
					default:
						render(t)
					}
				}
			}}
			w.run(t, ts)
			runtime.GC() // let the collector run any cleanup that gives memory back
			shown := 0
			for range 3 {
				shown += render(t)
			}
			if shown == 0 {
				t.Fatal("the trace pages showed no sent message: the test did not exercise gRPC's tracing")
			}
		})
	}
}
