package fsm

// State is a lifecycle state of a stream.
type State string

// The lifecycle states.
const (
	// Idle: created, never opened.
	Idle State = "idle"
	// Opening: a connection attempt is under way (first open or reconnect).
	Opening State = "opening"
	// Open: the server answered the open; records flow.
	Open State = "open"
	// Paused: an ephemeral stream received a close signal and drains acks
	// during the grace period before it reconnects; nothing new is sent.
	Paused State = "paused"
	// Recovering: a retryable failure ended the connection; the stream waits
	// out a backoff before the next attempt.
	Recovering State = "recovering"
	// Closing: everything accepted is durable and the connection is being
	// ended cleanly (half-close, then drain).
	Closing State = "closing"
	// Closed: the stream ended cleanly. Terminal.
	Closed State = "closed"
	// Failed: the stream ended with an error. Terminal.
	Failed State = "failed"
)

// States lists every state, in lifecycle order.
func States() []State {
	return []State{Idle, Opening, Open, Paused, Recovering, Closing, Closed, Failed}
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool { return s == Closed || s == Failed }

// Trigger is an event that moves the lifecycle.
type Trigger string

// The lifecycle triggers.
const (
	// StartOpen begins the first connection attempt.
	StartOpen Trigger = "open"
	// Opened records that the server answered the open request.
	Opened Trigger = "opened"
	// Pause starts an ephemeral close-signal grace period.
	Pause Trigger = "pause"
	// Reconnect starts a new connection attempt: after a backoff, after a
	// grace period, or at once on a persistent close signal.
	Reconnect Trigger = "reconnect"
	// Lose records a retryable connection failure.
	Lose Trigger = "lose"
	// Close begins ending the stream cleanly.
	Close Trigger = "close"
	// Finish records that the connection has ended after a clean close.
	Finish Trigger = "finish"
	// Fail ends the stream with an error.
	Fail Trigger = "fail"
)

// transition is one edge set of the lifecycle: Trigger moves any state in
// From to To. The table below is the single definition of the lifecycle.
type transition struct {
	Trigger Trigger
	From    []State
	To      State
}

var transitions = [...]transition{
	{StartOpen, []State{Idle}, Opening},
	{Opened, []State{Opening}, Open},
	{Pause, []State{Open}, Paused},
	{Reconnect, []State{Open, Paused, Recovering}, Opening},
	{Lose, []State{Opening, Open, Paused}, Recovering},
	{Close, []State{Idle, Opening, Open, Paused, Recovering}, Closing},
	{Finish, []State{Closing}, Closed},
	{Fail, []State{Idle, Opening, Open, Paused, Recovering, Closing}, Failed},
}

// Triggers lists every trigger, in the order of the lifecycle table.
func Triggers() []Trigger {
	out := make([]Trigger, len(transitions))
	for i, t := range transitions {
		out[i] = t.Trigger
	}
	return out
}
