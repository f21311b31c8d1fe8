package fsm

import (
	"context"
	"fmt"

	lfsm "github.com/looplab/fsm"
)

// Lifecycle is the state machine of one stream. The zero value is not usable;
// call New. A Lifecycle is not safe for concurrent use: it belongs to the
// protocol core that owns the stream.
type Lifecycle struct {
	m *lfsm.FSM
}

// TransitionError reports a trigger that the current state does not allow.
type TransitionError struct {
	From    State
	Trigger Trigger
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("fsm: %q is not allowed in state %q", e.Trigger, e.From)
}

// New returns a lifecycle in state Idle.
func New() *Lifecycle {
	events := make([]lfsm.EventDesc, 0, len(transitions))
	for _, t := range transitions {
		src := make([]string, len(t.From))
		for i, s := range t.From {
			src[i] = string(s)
		}
		events = append(events, lfsm.EventDesc{Name: string(t.Trigger), Src: src, Dst: string(t.To)})
	}
	return &Lifecycle{m: lfsm.NewFSM(string(Idle), events, nil)}
}

// State returns the current state.
func (l *Lifecycle) State() State { return State(l.m.Current()) }

// Can reports whether t is allowed in the current state.
func (l *Lifecycle) Can(t Trigger) bool { return l.m.Can(string(t)) }

// Fire applies t. It returns a *TransitionError and changes nothing when the
// current state does not allow t.
func (l *Lifecycle) Fire(t Trigger) error {
	from := l.State()
	if !l.m.Can(string(t)) {
		return &TransitionError{From: from, Trigger: t}
	}
	// Background context: a cancelled one would leave looplab/fsm mid-transition.
	if err := l.m.Event(context.Background(), string(t)); err != nil {
		// Can said yes and there are no callbacks to cancel, so an error here
		// means the table itself is broken.
		panic(fmt.Sprintf("fsm: %q from %q refused after Can: %v", t, from, err))
	}
	return nil
}

// Mermaid returns the lifecycle as a Mermaid state diagram, generated from the
// live machine so that the picture cannot drift from the code.
func Mermaid() string {
	out, err := lfsm.VisualizeForMermaidWithGraphType(New().m, lfsm.StateDiagram)
	if err != nil {
		panic(fmt.Sprintf("fsm: mermaid: %v", err))
	}
	return out
}
