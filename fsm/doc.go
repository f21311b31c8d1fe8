// Package fsm is the lifecycle of one zbstream stream: idle, opening, open,
// paused, recovering, closing, closed and failed, over github.com/looplab/fsm.
//
// It guards transitions only. A transition costs a few hundred nanoseconds
// and a handful of allocations, which is fine for the handful of transitions a
// connection sees and far too slow for the data path, so the protocol core
// never fires an event per record or per ack.
//
// The machine follows the rules the project keeps for looplab/fsm: events are
// fired with context.Background() (a cancelled context would wedge the
// machine mid-transition), never asynchronously, with no callbacks (so no side
// effects hide in them), and Can is asked before a transition that may
// legitimately be refused.
package fsm
