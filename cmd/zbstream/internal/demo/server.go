package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/zbstream/zbstream/server"
)

// demoServer is the demo's server process: the reference server on the
// durable bolt engine, strict duplicates on, with a fault schedule that
// drops connections, loses acks after commit and rotates sessions. It
// prints "listening ADDR" once serving and "fault KIND" for every fault
// that acts, and runs until it is killed or ctx ends.
func demoServer(ctx context.Context, cfg config, stdout io.Writer) error {
	st, err := server.OpenBoltStore(cfg.DataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := server.New(server.Options{
		Store:            st,
		Auth:             server.NewAuth(map[string]server.Principal{cfg.Token: {Name: "demo", Tables: []string{demoTable}}}),
		StrictDuplicates: true,
	})
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	fmt.Fprintln(stdout, "listening", lis.Addr())

	if cfg.FaultEvery > 0 {
		go faults(ctx, srv, cfg, stdout)
	}
	select {
	case <-ctx.Done():
		srv.GracefulStop()
		return nil
	case err := <-served:
		return err
	}
}

// faultKinds are the faults the schedule draws from.
var faultKinds = []server.FaultKind{server.FaultDrop, server.FaultCommitThenDrop, server.FaultCloseSignal}

// faults injects one fault at a time, at random points, and reports each
// as it acts.
func faults(ctx context.Context, srv *server.Server, cfg config, stdout io.Writer) {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(time.Now().UnixNano())))
	for {
		f := server.Fault{
			Kind:  faultKinds[rng.IntN(len(faultKinds))],
			After: 1 + rng.IntN(2*cfg.FaultEvery),
			Delay: time.Duration(rng.IntN(200)) * time.Millisecond,
		}
		h := srv.Inject(server.Match{Table: demoTable}, f)
		select {
		case <-h.Fired():
			fmt.Fprintln(stdout, "fault", f.Kind)
		case <-ctx.Done():
			h.Remove()
			return
		}
	}
}
