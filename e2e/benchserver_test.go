package e2e_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
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
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envBenchServer+"="+strconv.Itoa(int(e)))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	endpoint, ok := strings.CutPrefix(strings.TrimSpace(line), "endpoint: ")
	if err != nil || !ok {
		stop()
		b.Fatalf("the server process printed %q (%v), want its endpoint", line, err)
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
