package grpcio_test

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"

	streamio "github.com/zbstream/zbstream/io"
)

// TestLentPayloadsComeBackOnceWritten: over real gRPC, a conn hands gRPC
// lent payloads (single records and a framed batch, io.Loan) and every
// borrow comes back once gRPC has written them, so that the stream can
// reuse the memory; the server reads each payload as it was.
func TestLentPayloadsComeBackOnceWritten(t *testing.T) {
	const calls = 20
	got := make(chan [][]byte, 1)
	handler := func(_ any, st grpc.ServerStream) error {
		var msgs [][]byte
		for len(msgs) < 1+calls { // the create, then the calls
			var b []byte
			if err := st.RecvMsg(&b); err != nil {
				break
			}
			msgs = append(msgs, b)
		}
		got <- msgs
		<-st.Context().Done()
		return nil
	}
	c := openRaw(t, "main.lent.events", handler)
	if b, ok := c.(streamio.Borrower); !ok || !b.Borrows() {
		t.Fatal("the conn does not borrow")
	}
	loans := make([]*streamio.Loan, calls)
	payloads := make([][]byte, calls)
	for i := range calls {
		loans[i] = new(streamio.Loan)
		payloads[i] = bytes.Repeat([]byte{'a' + byte(i)}, 64<<10)
		call := streamio.Call{Wire: int64(i), Record: payloads[i], Loan: loans[i]}
		if i%2 == 1 { // a batch of two records, framed as the stream keeps it
			half := len(payloads[i]) / 2
			first := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), payloads[i][:half])
			framed := protowire.AppendBytes(protowire.AppendTag(first, 1, protowire.BytesType), payloads[i][half:])
			head := len(first) - half
			payloads[i] = framed
			call = streamio.Call{Wire: int64(i), Records: [][]byte{framed[head:len(first)], framed[len(first)+head:]}, Framed: framed, Loan: loans[i]}
		}
		if err := c.Send(call); err != nil {
			t.Fatal(err)
		}
	}
	var msgs [][]byte
	select {
	case msgs = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not read the calls")
	}
	if len(msgs) != 1+calls {
		t.Fatalf("server read %d messages, want %d", len(msgs), 1+calls)
	}
	for i, m := range msgs[1:] {
		if !bytes.HasSuffix(m, payloads[i]) {
			t.Errorf("call %d: the message does not end with its payload", i)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, l := range loans {
		for l.Outstanding() != 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // gRPC frees a buffer right after writing it
		}
		if n := l.Outstanding(); n != 0 {
			t.Errorf("call %d: %d borrows out after the server read it", i, n)
		}
	}
}
