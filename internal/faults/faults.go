// Package faults is the one vocabulary of injected server misbehaviour,
// shared by the reference server (server.Fault) and the in-memory
// transport (memtransport.Fault): the same misbehaviour has the same name
// and the same meaning in both, so that a scenario moves from an io test to
// an e2e test by changing the package name only.
//
// A kind that provokes exactly one protocol violation the client checks is
// named after that core.Violation (AckBelowFloor, AckMissing, ...); its
// Violation says which. The package imports nothing from core, so that the
// reference server stays independent of the client it checks; a test of
// this package compares the names, values and texts with core's.
//
// Faults act at points of one connection. The open is one point; after it,
// every ingest request (single record or batch) the server receives is a
// point, numbered 1, 2, ... on that connection (the count restarts on every
// connection). On an Arrow Flight DoPut call the open is the schema frame
// and each data frame is a request: After = N is the call's Nth data frame. A fault with After = N acts at the first point whose number
// is at least N (After = 0: right after the open response, or at the next
// request of a connection already open). The faults checked at the open
// itself (FailOpen, HangOpen and the open-response kinds) ignore After.
//
// A fault acts Times times before it is spent and removed: once when Times
// is 0 or 1, n times for n, until removed for Unlimited. One act is one
// connection for the open and connection-ending kinds, one ack for the ack
// kinds.
package faults

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Kind says what an injected fault does. The injectors document each
// kind's parameters; see their FaultKind.
type Kind uint8

// The kinds. Not every injector supports every kind: see Supports.
const (
	// FailOpen rejects an open (create or resume) with Code before
	// anything is created or fenced.
	FailOpen Kind = iota + 1
	// HangOpen never answers an open.
	HangOpen
	// LoseOpenResponse performs the open and then ends the call with Code
	// instead of answering: the lost create response.
	LoseOpenResponse
	// OpenResponseKind answers an open with the wrong kind of response
	// (core.OpenResponseKind).
	OpenResponseKind
	// StreamIDMissing answers a create with a create response without a
	// stream id (core.StreamIDMissing).
	StreamIDMissing
	// ResumeWatermark answers a resume with Watermark as
	// last_committed_offset instead of the true one.
	ResumeWatermark
	// ResumeWithoutWatermark answers a resume without
	// last_committed_offset.
	ResumeWithoutWatermark
	// Drop stores and acknowledges request After, then ends the call with
	// Code.
	Drop
	// DiscardThenDrop discards request After (the ones before it were
	// stored and acknowledged), then ends the call with Code.
	DiscardThenDrop
	// CommitThenDrop stores request After without acknowledging it, then
	// ends the call with Code: the lost-ack race.
	CommitThenDrop
	// CloseSignal sends close_stream_signal with Delay after request After,
	// as a session rotation does.
	CloseSignal
	// LoseAcks does not send one ack (per act).
	LoseAcks
	// DelayAcks holds one ack (per act) back for Delay.
	DelayAcks
	// RepeatAcks sends one ack (per act) 1 + Repeat times (Repeat 0 means
	// 1).
	RepeatAcks
	// AckMissing sends one ack without durability_ack_up_to_offset
	// (core.AckMissing).
	AckMissing
	// AckBelowFloor replaces one ack by one below the previous ack of the
	// connection, or below the true value when none was sent yet
	// (core.AckBelowFloor).
	AckBelowFloor
	// AckAboveSent replaces one ack by one Above (default 1) above the
	// highest offset received on the connection (core.AckAboveSent).
	AckAboveSent
	// PartialAck acknowledges the requests before request After, stores
	// request After without acknowledging it, then ends the call with
	// Code: the last ack covers only part of what was stored. On a Flight
	// call, where a batch travels as several frames, an After inside a
	// batch acknowledges the batch in part, and the client resends its
	// unacknowledged row suffix, the stored frame After included (at
	// least once).
	PartialAck

	numKinds = iota + 1 // one past the last kind
)

// Rule is a core.Violation as this package knows it without importing
// core: its value and its text (Violation.String). The kind provoking it
// bears the constant's name.
type Rule struct {
	ID   uint8
	Text string
}

type info struct {
	name string
	rule Rule // zero: no single violation
	on   Injector
}

// Injector names the injectors of faults.
type Injector uint8

// The injectors.
const (
	// Server is the reference server, package server.
	Server Injector = 1 << iota
	// Memory is the in-memory transport, package io/memtransport.
	Memory
	// Flight is the reference server's Arrow Flight DoPut calls: the
	// server injects these kinds on them, with the same Match and Fault.
	Flight

	both = Server | Memory
)

var kinds = [numKinds]info{
	FailOpen:               {name: "FailOpen", on: both | Flight},
	HangOpen:               {name: "HangOpen", on: Memory},
	LoseOpenResponse:       {name: "LoseOpenResponse", on: both},
	OpenResponseKind:       {name: "OpenResponseKind", rule: Rule{7, "open answered with the wrong response kind"}, on: both},
	StreamIDMissing:        {name: "StreamIDMissing", rule: Rule{8, "create response without a stream id"}, on: both},
	ResumeWatermark:        {name: "ResumeWatermark", on: both},
	ResumeWithoutWatermark: {name: "ResumeWithoutWatermark", on: both},
	Drop:                   {name: "Drop", on: both | Flight},
	DiscardThenDrop:        {name: "DiscardThenDrop", on: Memory | Flight},
	CommitThenDrop:         {name: "CommitThenDrop", on: both | Flight},
	CloseSignal:            {name: "CloseSignal", on: both | Flight},
	LoseAcks:               {name: "LoseAcks", on: Memory | Flight},
	DelayAcks:              {name: "DelayAcks", on: both | Flight},
	RepeatAcks:             {name: "RepeatAcks", on: both | Flight},
	AckMissing:             {name: "AckMissing", rule: Rule{1, "ack without an offset"}, on: both},
	AckBelowFloor:          {name: "AckBelowFloor", rule: Rule{2, "ack below the ack floor"}, on: both},
	AckAboveSent:           {name: "AckAboveSent", rule: Rule{3, "ack above the highest offset sent on this connection"}, on: both | Flight},
	PartialAck:             {name: "PartialAck", on: Flight},
}

// Kinds returns every kind, in order.
func Kinds() []Kind {
	ks := make([]Kind, 0, numKinds-1)
	for k := Kind(1); k < numKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}

// String returns the kind's name ("Drop").
func (k Kind) String() string {
	if k.valid() {
		return kinds[k].name
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k > 0 && k < numKinds }

// Violation returns the core.Violation the kind provokes, if it is named
// after one.
func (k Kind) Violation() (Rule, bool) {
	if !k.valid() || kinds[k].rule.ID == 0 {
		return Rule{}, false
	}
	return kinds[k].rule, true
}

// Supports reports whether injector in implements kind k; for a set of
// injectors (Server | Flight), whether one of them does.
func Supports(in Injector, k Kind) bool { return k.valid() && kinds[k].on&in != 0 }

// Unlimited as Times makes a fault act until it is removed.
const Unlimited = -1

// Spec is what a Registry needs of a fault: its kind, the point from which
// it acts and how many times.
type Spec struct {
	Kind  Kind
	After int
	Times int
}

// At is the point of a connection where an injector asks for faults: the
// open (After is ignored), or Call requests received.
type At struct {
	Call int
	Open bool
}

// Handle is an injected fault: it says whether the fault acted and removes
// it.
type Handle struct {
	mu      *sync.Mutex
	unlink  func() // removes the fault from its registry; mu held
	hits    int    // guarded by mu
	removed bool
	fired   chan struct{}
}

// Remove disarms the fault; it acts no more. It is idempotent.
func (h *Handle) Remove() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked()
}

func (h *Handle) removeLocked() {
	if !h.removed {
		h.removed = true
		h.unlink()
	}
}

// Hits reports how many times the fault has acted.
func (h *Handle) Hits() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits
}

// Fired is closed when the fault acts for the first time.
func (h *Handle) Fired() <-chan struct{} { return h.fired }

// Spent reports whether the fault acted its Times times or was removed.
func (h *Handle) Spent() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.removed
}

// Registry holds the armed faults of one injector: F is its fault, M what
// selects the connections a fault applies to.
type Registry[M, F any] struct {
	in      Injector
	mu      sync.Mutex
	entries []*entry[M, F]
	n       atomic.Int32 // len(entries), read without the lock on hot paths
}

type entry[M, F any] struct {
	h     *Handle
	match M
	fault F
	spec  Spec
}

// NewRegistry returns the registry of injector in, or of a set of
// injectors sharing one registry (the reference server's stream RPCs and
// its Flight calls: Server | Flight).
func NewRegistry[M, F any](in Injector) *Registry[M, F] { return &Registry[M, F]{in: in} }

// Add arms f for the connections m selects. It panics when no injector of
// the registry implements the kind: such a fault would never act. In a
// registry of several injectors, a kind acts only where it is implemented
// (an injector asks Take for its own kinds only).
func (r *Registry[M, F]) Add(m M, f F, s Spec) *Handle {
	if !Supports(r.in, s.Kind) {
		panic(fmt.Sprintf("zbstream: fault kind %v is not supported by this injector", s.Kind))
	}
	e := &entry[M, F]{match: m, fault: f, spec: s}
	e.h = &Handle{mu: &r.mu, fired: make(chan struct{}), unlink: func() {
		r.entries = slices.DeleteFunc(r.entries, func(x *entry[M, F]) bool { return x == e })
		r.n.Store(int32(len(r.entries)))
	}}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	r.n.Store(int32(len(r.entries)))
	return e.h
}

// Armed reports whether any fault is armed: a cheap check before Take.
func (r *Registry[M, F]) Armed() bool { return r.n.Load() != 0 }

// Take claims one act of the first armed fault of one of ks that applies
// at the point at of a connection that matches selects: it counts a hit,
// and removes the fault once spent.
func (r *Registry[M, F]) Take(at At, matches func(M) bool, ks ...Kind) (F, bool) {
	var zero F
	if !r.Armed() {
		return zero, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		s := e.spec
		if !slices.Contains(ks, s.Kind) || (!at.Open && at.Call < s.After) || !matches(e.match) {
			continue
		}
		h := e.h
		h.hits++
		if h.hits == 1 {
			close(h.fired)
		}
		if s.Times >= 0 && h.hits >= max(s.Times, 1) {
			h.removeLocked()
		}
		return e.fault, true
	}
	return zero, false
}
