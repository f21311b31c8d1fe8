package faults

import (
	"slices"
	"testing"
)

// TestRegistryActs pins the targeting and counting every injector shares:
// After counts requests (ignored at the open), Times counts acts (0: once,
// Unlimited: until removed), and the first matching fault acts.
func TestRegistryActs(t *testing.T) {
	r := NewRegistry[string, string](Server | Memory)
	all := func(string) bool { return true }
	h := r.Add("m", "drop", Spec{Kind: Drop, After: 2, Times: 2})
	if _, ok := r.Take(At{Call: 1}, all, Drop); ok {
		t.Fatal("acted before After")
	}
	if _, ok := r.Take(At{Call: 2}, all, CommitThenDrop); ok {
		t.Fatal("acted for another kind")
	}
	if f, ok := r.Take(At{Call: 2}, all, Drop); !ok || f != "drop" || h.Spent() {
		t.Fatalf("first act: %q %v spent %v", f, ok, h.Spent())
	}
	select {
	case <-h.Fired():
	default:
		t.Fatal("Fired not closed")
	}
	if _, ok := r.Take(At{Open: true}, all, Drop); !ok || !h.Spent() || h.Hits() != 2 {
		t.Fatalf("second act (at the open, After ignored): %v spent %v hits %d", ok, h.Spent(), h.Hits())
	}
	if _, ok := r.Take(At{Call: 9}, all, Drop); ok || r.Armed() {
		t.Fatal("spent fault acted")
	}

	once := r.Add("m", "once", Spec{Kind: AckMissing})
	if _, ok := r.Take(At{}, func(m string) bool { return m != "m" }, AckMissing); ok {
		t.Fatal("acted on a connection it does not match")
	}
	r.Take(At{}, all, AckMissing)
	if !once.Spent() || once.Hits() != 1 {
		t.Fatal("Times 0 is not once")
	}

	forever := r.Add("m", "forever", Spec{Kind: RepeatAcks, Times: Unlimited})
	for range 100 {
		if _, ok := r.Take(At{}, all, RepeatAcks); !ok {
			t.Fatal("Unlimited fault spent")
		}
	}
	forever.Remove()
	forever.Remove()
	if _, ok := r.Take(At{}, all, RepeatAcks); ok || !forever.Spent() || forever.Hits() != 100 {
		t.Fatal("removed fault acted")
	}
}

func TestRegistryRefusesUnsupportedKinds(t *testing.T) {
	for _, k := range append(Kinds(), 0, numKinds) {
		for _, in := range []Injector{Server, Memory, Flight, Server | Flight} {
			func() {
				defer func() {
					if (recover() == nil) != Supports(in, k) {
						t.Errorf("Add(%v) on injector %d: panic does not match Supports", k, in)
					}
				}()
				NewRegistry[int, int](in).Add(0, 0, Spec{Kind: k})
			}()
		}
	}
	var memOnly, flight []Kind
	for _, k := range Kinds() {
		if !Supports(Server, k) && Supports(Memory, k) {
			memOnly = append(memOnly, k)
		}
		if Supports(Flight, k) {
			flight = append(flight, k)
		}
		if !Supports(Memory, k) && !Supports(Server, k) && k != PartialAck {
			t.Errorf("%v: the in-memory transport implements every kind of the stream RPCs", k)
		}
	}
	if want := []Kind{HangOpen, DiscardThenDrop, LoseAcks}; !slices.Equal(memOnly, want) {
		t.Errorf("kinds only the in-memory transport implements: %v, want %v", memOnly, want)
	}
	want := []Kind{FailOpen, Drop, DiscardThenDrop, CommitThenDrop, CloseSignal, LoseAcks, DelayAcks, RepeatAcks, AckAboveSent, PartialAck}
	if !slices.Equal(flight, want) {
		t.Errorf("kinds of Flight calls: %v, want %v", flight, want)
	}
	if !Supports(Server|Flight, PartialAck) || !Supports(Server|Flight, FailOpen) || Supports(Server|Flight, HangOpen) {
		t.Error("a set of injectors supports what one of them does")
	}
}

func TestKindNames(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		n := k.String()
		if n == "" || seen[n] {
			t.Errorf("kind %d: name %q empty or repeated", k, n)
		}
		seen[n] = true
	}
	if got := Kind(0).String(); got != "FaultKind(0)" {
		t.Errorf("Kind(0) = %q", got)
	}
}
