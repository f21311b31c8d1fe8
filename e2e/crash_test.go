package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server/servertest"
)

// Environment of the child process of TestProcessResume.
const (
	envCrashChild    = "ZBSTREAM_CRASH_CHILD"
	envCrashEndpoint = "ZBSTREAM_CRASH_ENDPOINT"
	envCrashToken    = "ZBSTREAM_CRASH_TOKEN"
	envCrashTable    = "ZBSTREAM_CRASH_TABLE"
	envCrashStream   = "ZBSTREAM_CRASH_STREAM"
	envCrashTotal    = "ZBSTREAM_CRASH_TOTAL"
)

// TestProcessResume is exactly-once across process deaths: a child process
// ingests the source (record i is {"seq":i}, one per call, so offset i is
// source position i) into a persistent stream and is killed with SIGKILL
// mid-stream, three times. Each new child resumes the stream by id,
// continues at the watermark + 1 and replays the source from there. The
// server must end up holding every record once, in order: no duplicate,
// no gap.
func TestProcessResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ts := servertest.Start(t)
	endpoint := "http://" + ts.Addr
	ctx := context.Background()

	client, err := zbstream.NewClient(endpoint, zbstream.WithToken(ts.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s, err := client.CreatePersistentStream(ctx, ts.Table)
	if err != nil {
		t.Fatal(err)
	}
	id := s.StreamID()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	const total = 20000
	for round := range 4 {
		var stderr bytes.Buffer
		cmd, lines, err := startChild([]string{"-test.run=^TestProcessResumeChild$", "-test.v"}, []string{envCrashChild + "=1",
			envCrashEndpoint + "=" + endpoint, envCrashToken + "=" + ts.Token, envCrashTable + "=" + ts.Table,
			envCrashStream + "=" + id, envCrashTotal + "=" + strconv.Itoa(total)}, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		resumedAt, progress := int64(-2), 0
		for lines.Scan() {
			line := lines.Text()
			if n, ok := strings.CutPrefix(line, "resumed "); ok {
				resumedAt, _ = strconv.ParseInt(n, 10, 64)
			}
			if strings.HasPrefix(line, "durable ") {
				progress++
			}
			// Kill the first three children once they have made some
			// progress of their own, with calls still in flight.
			if round < 3 && progress == 3 {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		err = cmd.Wait()
		t.Logf("round %d: child resumed at watermark %d, exit: %v", round, resumedAt, err)
		if resumedAt == -2 {
			t.Fatalf("round %d: the child never resumed: %v\n%s", round, err, stderr.String())
		}
		if round < 3 && err == nil {
			t.Fatalf("round %d: the child finished before it was killed", round)
		}
		if round == 3 && err != nil {
			t.Fatalf("last child failed: %v\n%s", err, stderr.String())
		}
	}

	batches, err := ts.Records(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for _, b := range batches {
		for _, r := range b.Records {
			if want := fmt.Sprintf(`{"seq":%d}`, next); string(r) != want {
				t.Fatalf("record %d on the server is %s, want %s", next, r, want)
			}
			next++
		}
	}
	if next != total {
		t.Fatalf("server holds %d records, want %d", next, total)
	}
}

// TestProcessResumeChild is the child process of TestProcessResume; it is
// skipped unless run as that child.
func TestProcessResumeChild(t *testing.T) {
	if os.Getenv(envCrashChild) != "1" {
		t.Skip("the child of TestProcessResume")
	}
	ctx := context.Background()
	total, _ := strconv.Atoi(os.Getenv(envCrashTotal))
	client, err := zbstream.NewClient(os.Getenv(envCrashEndpoint), zbstream.WithToken(os.Getenv(envCrashToken)))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	every := int64(total / 50)
	s, err := client.ResumeStream(ctx, os.Getenv(envCrashTable), os.Getenv(envCrashStream),
		zbstream.WithOnAck(func(o int64) {
			if o%every == 0 {
				fmt.Println("durable", o)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	w := s.LastDurable()
	fmt.Println("resumed", w)
	for i := w + 1; i < int64(total); i++ {
		off, err := s.IngestRecord(ctx, []byte(fmt.Sprintf(`{"seq":%d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		if off != i {
			t.Fatalf("record %d got offset %d", i, off)
		}
		if i%500 == 0 {
			time.Sleep(time.Millisecond) // let the parent's kill land mid-stream
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
