package core_test

import (
	"errors"
	"testing"

	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/fsm"
)

func TestFailFromDriver(t *testing.T) {
	cause := errors.New("callback panicked")
	cfg := core.DefaultConfig(core.Persistent, core.RecordJSON)
	cfg.ClientRequestID = "req-fail"
	m, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Fail(0, nil); err == nil {
		t.Fatal("Fail(nil) accepted")
	}
	m.Open(0)
	m.Poll(nil)
	m.Receive(0, 1, core.Response{Kind: core.RespCreate, StreamID: "s", HasStreamID: true})
	m.IngestRecord(0, core.RecordJSON, []byte(`{}`))
	m.IngestRecord(0, core.RecordJSON, []byte(`{}`))
	m.Poll(nil)
	if err := m.Fail(-1, cause); !errors.Is(err, core.ErrTimeBackwards) {
		t.Fatalf("Fail with an earlier instant: %v", err)
	}
	if err := m.Fail(1, cause); err != nil {
		t.Fatal(err)
	}
	acts := m.Poll(nil)
	var kinds []core.ActionKind
	for _, a := range acts {
		kinds = append(kinds, a.Kind)
	}
	want := []core.ActionKind{core.ActAbort, core.ActFail, core.ActFinished}
	if len(kinds) != len(want) {
		t.Fatalf("actions %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("actions %v, want %v", kinds, want)
		}
	}
	if f := acts[1]; f.Offset != 0 || f.Last != 1 || !errors.Is(f.Err, cause) {
		t.Fatalf("fail action %+v", f)
	}
	if m.State() != fsm.Failed || !errors.Is(m.Err(), cause) || len(m.Unacked(nil)) != 2 {
		t.Fatalf("state %s err %v unacked %d", m.State(), m.Err(), len(m.Unacked(nil)))
	}
	if err := m.Fail(2, errors.New("again")); err != nil || !errors.Is(m.Err(), cause) {
		t.Fatalf("second Fail: %v, Err %v", err, m.Err())
	}
	if acts := m.Poll(nil); len(acts) != 0 {
		t.Fatalf("second Fail emitted %v", acts)
	}
}

// TestFailStoresTime: Fail is an input like any other: once it acted, an
// input with an earlier instant is time going backwards.
func TestFailStoresTime(t *testing.T) {
	cfg := core.DefaultConfig(core.Ephemeral, core.RecordJSON)
	m, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.Open(0)
	m.Poll(nil)
	if err := m.Fail(10, errors.New("abandoned")); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(5); !errors.Is(err, core.ErrTimeBackwards) {
		t.Fatalf("Close at 5 after Fail at 10: %v, want ErrTimeBackwards", err)
	}
}
