package io_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
	"github.com/zbstream/zbstream/io/memtransport"
)

// resumeConfig is the config of a fresh process resuming stream id.
func resumeConfig(id string) core.Config {
	cfg := config(core.Persistent)
	cfg.ClientRequestID = ""
	cfg.StreamID = id
	return cfg
}

// §8 persistent: create, ingest 0 and 1, flush, committed 1, close; resume
// gives watermark 1 and next offset 2.
func TestPersistentCreateAndResume(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		ctx := context.Background()
		s := open(t, srv, config(core.Persistent), streamio.Options{})
		id := s.StreamID()
		if id == "" {
			t.Fatal("no stream id after the create")
		}
		ingestN(t, s, 2, 0)
		if err := s.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if w, ok := srv.Watermark(id); !ok || w != 1 {
			t.Fatalf("server watermark = %d, %v; want 1", w, ok)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if info, _ := srv.Stream(id); info.Watermark != 1 || info.RequestID != "rid" {
			t.Fatalf("server stream after Close = %+v, want watermark 1 (close never retires)", info)
		}

		r := open(t, srv, resumeConfig(id), streamio.Options{})
		if r.StreamID() != id || r.LastDurable() != 1 || r.LastAssigned() != 1 {
			t.Fatalf("resumed: id %q, last durable %d, last assigned %d; want %q, 1, 1", r.StreamID(), r.LastDurable(), r.LastAssigned(), id)
		}
		if err := r.Wait(ctx, 1); err != nil { // at or below the watermark: at once
			t.Fatalf("Wait(1) after resume: %v", err)
		}
		ingest(t, r, 2, 2)
		if err := r.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wantStrings(t, "stored", stored(srv, id), recs(0, 3))
		if st := srv.Stats(); st.Creates != 1 || st.Resumes != 1 || st.Stored != 3 {
			t.Fatalf("server stats = %+v, want 1 create, 1 resume, 3 stored", st)
		}
		if st := r.Stats(); st.Reconciled != 0 || st.Acknowledged != 1 {
			t.Fatalf("resumed stream stats = %+v", st)
		}
	})
}

// §8 persistent: resume of an unknown id fails with NOT_FOUND (not
// retried); resume with a different record type fails with
// INVALID_ARGUMENT.
func TestPersistentResumeRefused(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(id string) core.Config
		code core.Code
	}{
		{"unknown id", func(string) core.Config { return resumeConfig("no-such-stream") }, core.CodeNotFound},
		{"other record type", func(id string) core.Config {
			cfg := resumeConfig(id)
			cfg.RecordType = core.RecordProto
			return cfg
		}, core.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				s := open(t, srv, config(core.Persistent), streamio.Options{})
				ingest(t, s, 0, 0)
				if err := s.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
				opens := srv.Stats().Opens
				r, err := streamio.Open(context.Background(), srv.Transport(), tt.cfg(s.StreamID()), streamio.Options{})
				if r != nil || err == nil {
					t.Fatalf("Open = %v, %v; want an error", r, err)
				}
				wantCode(t, "Open", err, tt.code)
				if n := srv.Stats().Opens - opens; n != 1 {
					t.Fatalf("%d open attempts, want 1 (not retryable)", n)
				}
				wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 1))
			})
		})
	}
}

// §8 persistent: resume of an empty stream gives no watermark and first
// offset 0.
func TestPersistentResumeEmpty(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		s := open(t, srv, config(core.Persistent), streamio.Options{})
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		r := open(t, srv, resumeConfig(s.StreamID()), streamio.Options{})
		if r.LastDurable() != core.NoOffset || r.LastAssigned() != core.NoOffset {
			t.Fatalf("resumed empty stream: last durable %d, last assigned %d; want -1, -1", r.LastDurable(), r.LastAssigned())
		}
		ingest(t, r, 0, 0)
		if err := r.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 1))
	})
}

// §8 persistent: a batch takes one offset and every record lands; two
// streams keep independent offsets.
func TestPersistentBatchesAndTwoStreams(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		ctx := context.Background()
		a := open(t, srv, config(core.Persistent), streamio.Options{})
		cfg := config(core.Persistent)
		cfg.ClientRequestID = "rid-b"
		b := open(t, srv, cfg, streamio.Options{})
		if a.StreamID() == b.StreamID() {
			t.Fatalf("two creates share stream %q", a.StreamID())
		}
		for i, s := range []*streamio.Stream{a, b, a, b} {
			want := int64(i / 2 * 2)
			off, err := s.IngestBatch(ctx, [][]byte{rec(10 * i), rec(10*i + 1), rec(10*i + 2)})
			if err != nil || off != want {
				t.Fatalf("IngestBatch #%d = %d, %v; want %d", i, off, err, want)
			}
			off, err = s.IngestRecord(ctx, rec(10*i+3))
			if err != nil || off != want+1 {
				t.Fatalf("IngestRecord #%d = %d, %v; want %d", i, off, err, want+1)
			}
		}
		for _, s := range []*streamio.Stream{a, b} {
			if err := s.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
		for k, s := range []*streamio.Stream{a, b} {
			var want []memtransport.Batch
			for j, i := range []int{k, k + 2} {
				want = append(want,
					memtransport.Batch{Offset: int64(2 * j), Records: [][]byte{rec(10 * i), rec(10*i + 1), rec(10*i + 2)}},
					memtransport.Batch{Offset: int64(2*j + 1), Records: [][]byte{rec(10*i + 3)}})
			}
			if got := srv.Batches(s.StreamID()); !reflect.DeepEqual(got, want) {
				t.Fatalf("stream %d batches = %v, want %v", k, got, want)
			}
			if st := s.Stats(); st.Accepted != 4 || st.Records != 8 || st.Acknowledged != 4 {
				t.Fatalf("stream %d stats = %+v", k, st)
			}
		}
	})
}

// §8 persistent: a create response without an id and a mismatched open
// response fail with a *core.ProtocolError, at the create and at a resume.
func TestPersistentHostileOpenResponse(t *testing.T) {
	tests := []struct {
		name   string
		fault  memtransport.FaultKind
		resume bool
		rule   core.Violation
	}{
		{"create without id", memtransport.FaultStreamIDMissing, false, core.StreamIDMissing},
		{"resume response to a create", memtransport.FaultOpenResponseKind, false, core.OpenResponseKind},
		{"create response to a resume", memtransport.FaultOpenResponseKind, true, core.OpenResponseKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				cfg := config(core.Persistent)
				if tt.resume {
					s := open(t, srv, cfg, streamio.Options{})
					ingest(t, s, 0, 0)
					if err := s.Close(context.Background()); err != nil {
						t.Fatalf("Close: %v", err)
					}
					cfg = resumeConfig(s.StreamID())
				}
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: tt.fault, Times: memtransport.Unlimited})
				opens := srv.Stats().Opens
				s, err := streamio.Open(context.Background(), srv.Transport(), cfg, streamio.Options{})
				if s != nil || err == nil {
					t.Fatalf("Open = %v, %v; want an error", s, err)
				}
				wantViolation(t, "Open", err, tt.rule)
				if n := srv.Stats().Opens - opens; n != 1 {
					t.Fatalf("%d open attempts, want 1 (a protocol violation is not retried)", n)
				}
			})
		})
	}
}

// §8 persistent: an ack lost after commit is reconciled from the resume
// watermark with exactly one write on the server; with recovery off the
// stream fails instead and Close still returns.
func TestPersistentCommitThenDrop(t *testing.T) {
	t.Run("reconciled", func(t *testing.T) {
		bubble(t, func(t *testing.T, srv *memtransport.Server) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCommitThenDrop, After: 2})
			var r recorder
			s := open(t, srv, config(core.Persistent), r.options())
			ingestN(t, s, 3, 0)
			if err := s.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			id := s.StreamID()
			got := srv.Batches(id)
			want := []memtransport.Batch{
				{Offset: 0, Records: [][]byte{rec(0)}},
				{Offset: 1, Records: [][]byte{rec(1)}},
				{Offset: 2, Records: [][]byte{rec(2)}},
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("server batches = %v, want %v", got, want)
			}
			if n := srv.Stats().Stored; n != 3 {
				t.Fatalf("server stored %d calls, want 3 (one write each)", n)
			}
			st := s.Stats()
			if st.Reconciled != 1 || st.Acknowledged != 2 || st.Reconnects != 1 {
				t.Fatalf("Stats = %+v, want offset 1 reconciled, 0 and 2 acknowledged, 1 reconnect", st)
			}
			if s.StreamID() != id || srv.Stats().Resumes != 1 || srv.Stats().Creates != 1 {
				t.Fatalf("reconnect was not a resume of %q: %+v", id, srv.Stats())
			}
			acked, failed, _ := r.snapshot()
			wantOffsets(t, "acked", acked, span(0, 3))
			wantOffsets(t, "failed", failed, nil)
		})
	})
	t.Run("recovery off", func(t *testing.T) {
		bubble(t, func(t *testing.T, srv *memtransport.Server) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCommitThenDrop, After: 2})
			cfg := config(core.Persistent)
			cfg.DisableRecovery = true
			s := open(t, srv, cfg, streamio.Options{})
			ingestN(t, s, 2, 0)
			<-s.Done()
			err := s.Close(context.Background())
			wantCode(t, "Close", err, core.CodeUnavailable)
			if !errors.Is(s.Err(), err) {
				t.Fatalf("Close = %v, Err = %v", err, s.Err())
			}
			// Offset 1 was committed, but only a resume could tell.
			wantOffsets(t, "Unacked", unackedOffsets(s), []int64{1})
			wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 2))
			if st := s.Stats(); st.Reconnects != 0 || st.Acknowledged != 1 || st.Failed != 1 {
				t.Fatalf("Stats = %+v", st)
			}
		})
	})
}

// §8 persistent: a resume watermark below the ack floor or above the
// highest offset sent fails the stream closed: nothing reconciled, nothing
// resent. A watermark of MaxInt64 fails with offset-space exhaustion.
func TestPersistentHostileWatermark(t *testing.T) {
	tests := []struct {
		name      string
		watermark int64
		rule      core.Violation
	}{
		{"below the ack floor", 0, core.WatermarkBelowFloor},
		{"above the highest sent", 3, core.WatermarkAboveAttempted},
		{"MaxInt64", math.MaxInt64, 0}, // offset-space exhaustion
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				var r recorder
				s := open(t, srv, config(core.Persistent), r.options())
				ingestN(t, s, 2, 0)
				if err := s.Flush(context.Background()); err != nil {
					t.Fatalf("Flush: %v", err)
				}
				srv.Inject(memtransport.Match{StreamID: s.StreamID()}, memtransport.Fault{Kind: memtransport.FaultResumeWatermark, Watermark: tt.watermark})
				srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop}) // call 3 (offset 2) is lost
				ingest(t, s, 2, 2)
				<-s.Done()
				for what, err := range map[string]error{"Err": s.Err(), "Close": s.Close(context.Background())} {
					if tt.rule == 0 {
						wantIs(t, what, err, core.ErrOffsetSpaceExhausted)
					} else {
						wantViolation(t, what, err, tt.rule)
					}
				}
				wantOffsets(t, "Unacked", unackedOffsets(s), []int64{2})
				st := s.Stats()
				if st.Reconciled != 0 || st.Resent != 0 || st.Acknowledged != 2 || st.Failed != 1 || st.Reconnects != 1 {
					t.Fatalf("Stats = %+v, want nothing reconciled or resent", st)
				}
				if ss := srv.Stats(); ss.Calls != 3 || ss.Stored != 2 || ss.Resumes != 1 {
					t.Fatalf("server stats = %+v, want 3 calls, 2 stored, 1 resume", ss)
				}
				acked, failed, _ := r.snapshot()
				wantOffsets(t, "acked", acked, []int64{0, 1})
				wantOffsets(t, "failed", failed, []int64{2})
			})
		})
	}
}

// §8 persistent: a fresh-process resume answered with a watermark of
// MaxInt64 fails with offset-space exhaustion.
func TestPersistentWatermarkMaxInt64(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		s := open(t, srv, config(core.Persistent), streamio.Options{})
		ingest(t, s, 0, 0)
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultResumeWatermark, Watermark: math.MaxInt64})
		r, err := streamio.Open(context.Background(), srv.Transport(), resumeConfig(s.StreamID()), streamio.Options{})
		if r != nil || err == nil {
			t.Fatalf("Open = %v, %v; want an error", r, err)
		}
		wantIs(t, "Open", err, core.ErrOffsetSpaceExhausted)
		if ss := srv.Stats(); ss.Calls != 1 || ss.Resumes != 1 {
			t.Fatalf("server stats = %+v, want the 1 call before and 1 resume (not retried)", ss)
		}
	})
}

// Persistent recovery is a resume by the known id that reconciles from the
// watermark: acks lost until the ack timeout, then a resume answers
// watermark 2 and offsets 0..2 complete without a resend; offset 3,
// ingested during recovery, goes out under its own offset.
func TestPersistentAckTimeoutReconciles(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, Times: 3})
		var r recorder
		s := open(t, srv, config(core.Persistent), r.options())
		id := s.StreamID()
		ingestN(t, s, 3, 0)
		settle(ackTimeout + backoffMax)
		ingest(t, s, 3, 3)
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		st := s.Stats()
		if st.Reconciled != 3 || st.Acknowledged != 1 || st.Resent != 0 || st.Reconnects != 1 {
			t.Fatalf("Stats = %+v, want 3 reconciled, 1 acknowledged, nothing resent", st)
		}
		if ss := srv.Stats(); ss.Creates != 1 || ss.Resumes != 1 || ss.Stored != 4 || ss.Calls != 4 {
			t.Fatalf("server stats = %+v, want 1 create, 1 resume, 4 calls stored once", ss)
		}
		wantStrings(t, "stored", stored(srv, id), recs(0, 4))
		acked, _, _ := r.snapshot()
		wantOffsets(t, "acked", acked, span(0, 4))
	})
}

// A close signal on a persistent stream means resume at once: no grace, no
// late-ack drain.
func TestPersistentCloseSignalResumesAtOnce(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		// The signal follows the create response (see TestEndAfterHeldAcks
		// for a signal after a call).
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultCloseSignal, Delay: 10 * time.Minute})
		s := open(t, srv, config(core.Persistent), streamio.Options{})
		synctest.Wait()
		if ss := srv.Stats(); ss.Resumes != 1 || ss.Opens != 2 {
			t.Fatalf("server stats = %+v right after the signal, want a resume at once", ss)
		}
		ingestN(t, s, 3, 0)
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 3))
		if n := srv.Stats().Stored; n != 3 {
			t.Fatalf("server stored %d calls, want 3", n)
		}
		if st := s.Stats(); st.Reconnects != 1 {
			t.Fatalf("Stats = %+v, want 1 reconnect", st)
		}
	})
}

// The first open of a persistent stream is retried, and a create whose
// response was lost is retried with the same request id, which the server
// answers with the same stream: no orphan.
func TestPersistentCreateRetried(t *testing.T) {
	for _, fault := range []memtransport.Fault{
		{Kind: memtransport.FaultFailOpen, Times: 2},
		{Kind: memtransport.FaultLoseOpenResponse, Times: 2},
	} {
		t.Run(fault.Kind.String(), func(t *testing.T) {
			bubble(t, func(t *testing.T, srv *memtransport.Server) {
				srv.Inject(memtransport.Match{}, fault)
				s := open(t, srv, config(core.Persistent), streamio.Options{})
				if st := s.Stats(); st.Opens != 3 {
					t.Fatalf("Stats = %+v, want 3 opens", st)
				}
				ingest(t, s, 0, 0)
				if err := s.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
				streams := srv.Streams()
				if len(streams) != 1 || streams[0].ID != s.StreamID() || streams[0].RequestID != "rid" {
					t.Fatalf("server streams = %+v, want one, %q", streams, s.StreamID())
				}
				wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 1))
			})
		})
	}
}

// Duplicate acks do not move the ack timer, with duplicates that come
// later than the ack they repeat. Offsets 0..2 are stored but their acks
// lost; the connection drops and the resume is answered "nothing
// committed", so the client sends 0..3 again and the server acknowledges 2
// for each of 0..2: at once for the first (progress: the ack timer is
// armed for offset 3, whose ack is lost), 30 s later for the other two
// (duplicates). The ack timeout must come AckTimeout after the progress,
// not after the duplicates.
func TestPersistentLateDuplicateAcks(t *testing.T) {
	bubble(t, func(t *testing.T, srv *memtransport.Server) {
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, Times: 3})
		s := open(t, srv, config(core.Persistent), streamio.Options{})
		ingestN(t, s, 3, 0)
		synctest.Wait()
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop}) // the next call: offset 3
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultResumeWithoutWatermark})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDelayAcks, After: 2, Delay: ackTimeout / 2})
		srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultLoseAcks, After: 4})
		ingest(t, s, 3, 3)
		settle(ackTimeout / 4)
		if st := s.Stats(); st.Reconnects != 1 || st.Acknowledged != 3 || st.Resent != 4 {
			t.Fatalf("Stats = %+v after the resume, want 1 reconnect, 0..2 acknowledged, 4 resent", st)
		}
		// Now 1.25 AckTimeout after the progress: past the duplicates (at
		// 0.5) and the ack timeout (at 1), before 1.5, where a timer moved
		// by the duplicates would fire.
		settle(ackTimeout)
		if st := s.Stats(); st.Reconnects != 2 {
			t.Fatalf("Stats = %+v 1.25 AckTimeout after the progress, want the ack timeout's reconnect", st)
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if st := s.Stats(); st.Reconciled != 1 || st.Acknowledged != 3 {
			t.Fatalf("Stats = %+v, want offset 3 reconciled", st)
		}
		wantStrings(t, "stored", stored(srv, s.StreamID()), recs(0, 4))
		if n := srv.Stats().Stored; n != 4 {
			t.Fatalf("server stored %d calls, want 4", n)
		}
	})
}

// TestAuthRejectionInvalidatesCredentials: §5.5: an auth rejection drops
// the transport's cached credentials, once per rejection. Mid-stream it
// fails the stream (UNAUTHENTICATED is not retryable); at the very first
// open it is retried once, with fresh credentials.
func TestAuthRejectionInvalidatesCredentials(t *testing.T) {
	t.Run("mid-stream", func(t *testing.T) {
		bubble(t, func(t *testing.T, srv *memtransport.Server) {
			s := open(t, srv, config(core.Persistent), streamio.Options{})
			ingest(t, s, 0, 0)
			if err := s.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := srv.Stats().CredentialInvalidations; n != 0 {
				t.Fatalf("%d invalidations before any rejection", n)
			}
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultDiscardThenDrop, Code: core.CodeUnauthenticated})
			ingest(t, s, 1, 1)
			wantCode(t, "flush after the rejection", s.Flush(context.Background()), core.CodeUnauthenticated)
			if n := srv.Stats().CredentialInvalidations; n != 1 {
				t.Fatalf("%d credential invalidations after one UNAUTHENTICATED end, want 1", n)
			}
		})
	})
	t.Run("first open", func(t *testing.T) {
		bubble(t, func(t *testing.T, srv *memtransport.Server) {
			srv.Inject(memtransport.Match{}, memtransport.Fault{Kind: memtransport.FaultFailOpen, Code: core.CodeUnauthenticated})
			s := open(t, srv, config(core.Persistent), streamio.Options{})
			if n := srv.Stats().CredentialInvalidations; n != 1 {
				t.Fatalf("%d credential invalidations after a rejected first open, want 1", n)
			}
			if st := s.Stats(); st.Opens != 2 {
				t.Fatalf("stats %+v: want the first open retried once", st)
			}
		})
	})
}
