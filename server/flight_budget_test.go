package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream/server/servertest"
)

// waitHolding waits until principal who holds some of ts's receive
// budget (a receiver's read hold).
func waitHolding(t *testing.T, ts *servertest.Server, who string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ts.Server.BudgetHeldBy(who) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never took a read hold", who)
		}
	}
}

// An Arrow call reads its frames within the receive budget, as the other
// streams do: its receiver holds a read while it waits for a frame, and
// when the call ends every byte is given back.
func TestArrowFramesHoldTheBudget(t *testing.T) {
	ts := startServer(t)
	ctx := arrowCtx(t, ts)
	rec := allTypesRows(t, 0, 50)
	defer rec.Release()
	st := openArrow(t, ts, ctx, rec.Schema())
	waitHolding(t, ts, "servertest") // the read hold for the next frame
	for i := range 3 {
		if err := st.Send(batchFrame(t, rec, offsetMeta(i))); err != nil {
			t.Fatal(err)
		}
	}
	for {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(r.AppMetadata), `"ack_up_to_offset":2,`) {
			break
		}
	}
	if err := expectEnd(t, st); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, ts, "servertest", 0)
}

// An Arrow call idle while another call waits for the budget yields:
// UNAVAILABLE, "server busy", which clients retry; the other call is then
// read.
func TestIdleArrowCallYields(t *testing.T) {
	ts := yieldServer(t)
	ctx := arrowCtx(t, ts)
	rec := allTypesRows(t, 0, 5)
	defer rec.Release()
	idle := openArrow(t, ts, ctx, rec.Schema())
	waitHolding(t, ts, "servertest")

	busy, _ := pcreate(t, ts, ts.Client(t), "busy")
	pjson(t, busy, 0, `{"b":1}`)
	pwaitAck(t, busy, 0)
	pclose(t, busy)

	_, err := idle.Recv()
	expectCode(t, err, codes.Unavailable)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "server busy") {
		t.Fatalf("status message %q, want server busy", msg)
	}
	waitHeld(t, ts, "servertest", 0)
}
