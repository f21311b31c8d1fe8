package io_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/zbstream/zbstream/core"
	streamio "github.com/zbstream/zbstream/io"
)

// heldPayload is a payload a transport kept past Send, and what it was.
type heldPayload struct {
	payload, want []byte
}

// TestBorrowedPayloadsStayIntact: a connection that borrows gets the
// payloads of large calls lent (Call.Loan), and what it keeps past Send
// without returning the loan (here the first eight calls', as a failed
// gRPC transport may) is never written again, while the stream carries on
// through many times its lendable memory; small calls are never lent.
func TestBorrowedPayloadsStayIntact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var held []heldPayload
		var lent, small int
		tr := newScripted(nil)
		tr.borrows = true
		tr.read = func(call streamio.Call) {
			if len(call.Record) < streamio.LendMin {
				if call.Loan != nil {
					small++
				}
				return
			}
			if call.Loan == nil {
				return
			}
			lent++
			call.Loan.Borrow()
			if len(held) < 8 {
				held = append(held, heldPayload{call.Record, bytes.Clone(call.Record)})
				return // never returned
			}
			call.Loan.Return()
		}
		s, c := openScripted(t, tr, config(core.Persistent), streamio.Options{})
		const calls = 400 // 25 MiB of 64 KiB records, through 4 MiB of lendable memory
		for i := range calls {
			r := bytes.Repeat(fmt.Appendf(nil, "%07d", i), 64<<10/7)
			if i%3 == 0 {
				r = fmt.Appendf(nil, `{"small":%d}`, i)
			}
			if off, err := s.IngestRecord(context.Background(), r); err != nil || off != int64(i) {
				t.Fatalf("IngestRecord %d: %d, %v", i, off, err)
			}
			synctest.Wait()
			c.resp <- ackOf(int64(i))
			synctest.Wait()
		}
		if lent < calls/2 || small != 0 {
			t.Fatalf("%d of %d large calls lent (want most), %d small ones lent (want none)", lent, calls-calls/3, small)
		}
		if st := s.Stats(); st.Lent != int64(lent) {
			t.Fatalf("Stats.Lent %d, want the %d calls sent with a loan", st.Lent, lent)
		}
		for i, h := range held {
			if !bytes.Equal(h.payload, h.want) {
				t.Fatalf("held payload %d was written over after its call was durable", i)
			}
		}
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNoLoanWithoutABorrower: a connection that does not borrow, and a
// stream with NoCopy, get no loans.
func TestNoLoanWithoutABorrower(t *testing.T) {
	for _, tc := range []struct {
		name    string
		borrows bool
		opts    streamio.Options
	}{{"not a borrower", false, streamio.Options{}}, {"nocopy", true, streamio.Options{NoCopy: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				loans := 0
				tr := newScripted(nil)
				tr.borrows = tc.borrows
				tr.read = func(call streamio.Call) {
					if call.Loan != nil {
						loans++
					}
				}
				s, c := openScripted(t, tr, config(core.Persistent), tc.opts)
				for i := range 20 {
					if _, err := s.IngestRecord(context.Background(), make([]byte, 64<<10)); err != nil {
						t.Fatal(err)
					}
					synctest.Wait()
					c.resp <- ackOf(int64(i))
				}
				if err := s.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				if loans != 0 || s.Stats().Lent != 0 {
					t.Fatalf("%d calls lent (Stats.Lent %d)", loans, s.Stats().Lent)
				}
			})
		})
	}
}
