package e2e_test

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/server"
)

// envBenchServer makes this test binary the server process of the
// benchmarks (the engine's number), instead of running tests.
const envBenchServer = "ZBSTREAM_E2E_BENCH_SERVER"

// startBenchServer starts the server the client benchmarks run against in
// a process of its own, this test binary run again: the benchmark's
// process is then the client's alone, as in a deployment, so the CPU it
// reports per record and the garbage it collects are the client's, not
// the server's too. It returns the endpoint and the function that stops
// the server.
func startBenchServer(b *testing.B, e server.Engine) (string, func()) {
	cmd, lines, err := startChild(nil, []string{envBenchServer + "=" + strconv.Itoa(int(e))}, os.Stderr)
	if err != nil {
		b.Fatal(err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	lines.Scan()
	endpoint, ok := strings.CutPrefix(lines.Text(), "endpoint: ")
	if !ok {
		stop()
		b.Fatalf("the server process printed %q (%v), want its endpoint", lines.Text(), lines.Err())
	}
	return endpoint, stop
}

// serveBenchChild is the server process of startBenchServer: it prints its
// endpoint and serves until it is killed. It returns the exit code.
func serveBenchChild(engine string) int {
	e, err := strconv.Atoi(engine)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", envBenchServer, engine, err)
		return 2
	}
	srv, err := server.New(server.Options{Engine: server.Engine(e)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("endpoint: http://%s\n", lis.Addr())
	if err := srv.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
