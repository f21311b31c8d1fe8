package fsm_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/fsm"
)

// allowed is the lifecycle table of states.go, written out independently:
// for each state, the triggers it allows and where they lead. Every pair not
// listed must be refused.
var allowed = map[fsm.State]map[fsm.Trigger]fsm.State{
	fsm.Idle: {
		fsm.StartOpen: fsm.Opening,
		fsm.Close:     fsm.Closing,
		fsm.Fail:      fsm.Failed,
	},
	fsm.Opening: {
		fsm.Opened: fsm.Open,
		fsm.Lose:   fsm.Recovering,
		fsm.Close:  fsm.Closing,
		fsm.Fail:   fsm.Failed,
	},
	fsm.Open: {
		fsm.Pause:     fsm.Paused,
		fsm.Reconnect: fsm.Opening,
		fsm.Lose:      fsm.Recovering,
		fsm.Close:     fsm.Closing,
		fsm.Fail:      fsm.Failed,
	},
	fsm.Paused: {
		fsm.Reconnect: fsm.Opening,
		fsm.Lose:      fsm.Recovering,
		fsm.Close:     fsm.Closing,
		fsm.Fail:      fsm.Failed,
	},
	fsm.Recovering: {
		fsm.Reconnect: fsm.Opening,
		fsm.Close:     fsm.Closing,
		fsm.Fail:      fsm.Failed,
	},
	fsm.Closing: {
		fsm.Finish: fsm.Closed,
		fsm.Fail:   fsm.Failed,
	},
	fsm.Closed: {},
	fsm.Failed: {},
}

// pathTo lists the triggers that lead from Idle to each state.
var pathTo = map[fsm.State][]fsm.Trigger{
	fsm.Idle:       nil,
	fsm.Opening:    {fsm.StartOpen},
	fsm.Open:       {fsm.StartOpen, fsm.Opened},
	fsm.Paused:     {fsm.StartOpen, fsm.Opened, fsm.Pause},
	fsm.Recovering: {fsm.StartOpen, fsm.Lose},
	fsm.Closing:    {fsm.StartOpen, fsm.Opened, fsm.Close},
	fsm.Closed:     {fsm.Close, fsm.Finish},
	fsm.Failed:     {fsm.StartOpen, fsm.Fail},
}

// reach returns a lifecycle in state s.
func reach(t *testing.T, s fsm.State) *fsm.Lifecycle {
	t.Helper()
	l := fsm.New()
	for _, tr := range pathTo[s] {
		if err := l.Fire(tr); err != nil {
			t.Fatalf("reaching %s: %v", s, err)
		}
	}
	if l.State() != s {
		t.Fatalf("reached %s, want %s", l.State(), s)
	}
	return l
}

func TestNewIsIdle(t *testing.T) {
	if got := fsm.New().State(); got != fsm.Idle {
		t.Fatalf("New().State() = %s, want idle", got)
	}
}

// TestTransitions fires every trigger in every state: an allowed one moves
// to the table's target, a refused one returns a *TransitionError naming the
// state and trigger and changes nothing (Can agrees either way).
func TestTransitions(t *testing.T) {
	for _, from := range fsm.States() {
		for _, tr := range fsm.Triggers() {
			to, ok := allowed[from][tr]
			name := fmt.Sprintf("%s/%s", from, tr)
			t.Run(name, func(t *testing.T) {
				l := reach(t, from)
				if got := l.Can(tr); got != ok {
					t.Errorf("Can(%s) in %s = %v, want %v", tr, from, got, ok)
				}
				err := l.Fire(tr)
				if ok {
					if err != nil {
						t.Fatalf("Fire(%s) in %s: %v", tr, from, err)
					}
					if l.State() != to {
						t.Errorf("Fire(%s) in %s led to %s, want %s", tr, from, l.State(), to)
					}
					return
				}
				var te *fsm.TransitionError
				if !errors.As(err, &te) {
					t.Fatalf("Fire(%s) in %s = %v, want a *TransitionError", tr, from, err)
				}
				if te.From != from || te.Trigger != tr {
					t.Errorf("TransitionError{From: %s, Trigger: %s}, want {%s, %s}", te.From, te.Trigger, from, tr)
				}
				want := fmt.Sprintf("fsm: %q is not allowed in state %q", string(tr), string(from))
				if te.Error() != want {
					t.Errorf("message %q, want %q", te.Error(), want)
				}
				if l.State() != from {
					t.Errorf("refused Fire(%s) moved %s to %s", tr, from, l.State())
				}
				// Still usable after a refusal: every allowed trigger works.
				for tr2 := range allowed[from] {
					if !l.Can(tr2) {
						t.Errorf("after a refusal, Can(%s) in %s = false", tr2, from)
					}
				}
			})
		}
	}
}

// TestRefusedTwiceChangesNothing fires a refused trigger repeatedly and an
// unknown one, then checks that the allowed path still works.
func TestRefusedTwiceChangesNothing(t *testing.T) {
	l := fsm.New()
	for range 3 {
		if err := l.Fire(fsm.Finish); err == nil {
			t.Fatal("finish allowed in idle")
		}
	}
	bogus := fsm.Trigger("bogus")
	if l.Can(bogus) {
		t.Error("Can(bogus) = true")
	}
	err := l.Fire(bogus)
	var te *fsm.TransitionError
	if !errors.As(err, &te) || te.From != fsm.Idle || te.Trigger != bogus {
		t.Fatalf("Fire(bogus) = %v", err)
	}
	if !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), `"idle"`) {
		t.Errorf("message %q names neither trigger nor state", err)
	}
	if l.State() != fsm.Idle {
		t.Fatalf("state %s after refusals", l.State())
	}
	for _, tr := range []fsm.Trigger{fsm.StartOpen, fsm.Opened, fsm.Close, fsm.Finish} {
		if err := l.Fire(tr); err != nil {
			t.Fatalf("Fire(%s): %v", tr, err)
		}
	}
	if l.State() != fsm.Closed {
		t.Errorf("state %s, want closed", l.State())
	}
}

// TestLongLife walks a realistic lifecycle with several reconnects.
func TestLongLife(t *testing.T) {
	l := fsm.New()
	steps := []struct {
		tr fsm.Trigger
		to fsm.State
	}{
		{fsm.StartOpen, fsm.Opening}, {fsm.Lose, fsm.Recovering}, {fsm.Reconnect, fsm.Opening},
		{fsm.Opened, fsm.Open}, {fsm.Pause, fsm.Paused}, {fsm.Reconnect, fsm.Opening},
		{fsm.Opened, fsm.Open}, {fsm.Reconnect, fsm.Opening}, {fsm.Opened, fsm.Open},
		{fsm.Pause, fsm.Paused}, {fsm.Lose, fsm.Recovering}, {fsm.Close, fsm.Closing},
		{fsm.Fail, fsm.Failed},
	}
	for i, s := range steps {
		if err := l.Fire(s.tr); err != nil || l.State() != s.to {
			t.Fatalf("step %d: Fire(%s) = %v, state %s, want %s", i, s.tr, err, l.State(), s.to)
		}
	}
}

func TestTerminal(t *testing.T) {
	for _, s := range fsm.States() {
		want := s == fsm.Closed || s == fsm.Failed
		if got := s.Terminal(); got != want {
			t.Errorf("%s.Terminal() = %v, want %v", s, got, want)
		}
		// Terminal means no trigger leaves the state.
		l := reach(t, s)
		leaves := false
		for _, tr := range fsm.Triggers() {
			leaves = leaves || l.Can(tr)
		}
		if leaves == want {
			t.Errorf("%s: Terminal() = %v but some trigger allowed = %v", s, want, leaves)
		}
	}
	if fsm.State("bogus").Terminal() {
		t.Error("an unknown state is terminal")
	}
}

func TestStates(t *testing.T) {
	want := []fsm.State{fsm.Idle, fsm.Opening, fsm.Open, fsm.Paused, fsm.Recovering, fsm.Closing, fsm.Closed, fsm.Failed}
	got := fsm.States()
	if !slices.Equal(got, want) {
		t.Fatalf("States() = %v, want %v", got, want)
	}
	names := []string{"idle", "opening", "open", "paused", "recovering", "closing", "closed", "failed"}
	for i, s := range got {
		if string(s) != names[i] {
			t.Errorf("state %d is %q, want %q", i, s, names[i])
		}
	}
	got[0] = "mutated"
	if fsm.States()[0] != fsm.Idle {
		t.Error("States() returns shared storage")
	}
	if len(allowed) != len(want) {
		t.Errorf("test table covers %d states, want %d", len(allowed), len(want))
	}
}

func TestTriggers(t *testing.T) {
	want := []fsm.Trigger{fsm.StartOpen, fsm.Opened, fsm.Pause, fsm.Reconnect, fsm.Lose, fsm.Close, fsm.Finish, fsm.Fail}
	got := fsm.Triggers()
	if !slices.Equal(got, want) {
		t.Fatalf("Triggers() = %v, want %v", got, want)
	}
	names := []string{"open", "opened", "pause", "reconnect", "lose", "close", "finish", "fail"}
	for i, tr := range got {
		if string(tr) != names[i] {
			t.Errorf("trigger %d is %q, want %q", i, tr, names[i])
		}
	}
	got[0] = "mutated"
	if fsm.Triggers()[0] != fsm.StartOpen {
		t.Error("Triggers() returns shared storage")
	}
}

// TestMermaidCoversTable: the generated diagram names every state and
// every allowed edge of the table.
func TestMermaidCoversTable(t *testing.T) {
	out := fsm.Mermaid()
	for from, edges := range allowed {
		for tr, to := range edges {
			edge := fmt.Sprintf("%s --> %s: %s", from, to, tr)
			if !strings.Contains(out, edge) {
				t.Errorf("diagram lacks %q", edge)
			}
		}
	}
}

// TestIndependentLifecycles: two lifecycles share nothing.
func TestIndependentLifecycles(t *testing.T) {
	a, b := fsm.New(), fsm.New()
	if err := a.Fire(fsm.StartOpen); err != nil {
		t.Fatal(err)
	}
	if b.State() != fsm.Idle {
		t.Errorf("firing one lifecycle moved another to %s", b.State())
	}
}
