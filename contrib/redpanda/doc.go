// Package zbredpanda is a Redpanda Connect (Benthos) output, zerobus, that
// writes a pipeline's messages into Zerobus tables with zbstream. It is a
// module of its own, so that the zbstream library does not depend on
// Benthos. Register it in an environment and run that environment, as
// cmd/zbredpanda does:
//
//	env := service.NewEnvironment()
//	if err := zbredpanda.Register(env); err != nil { ... }
//	service.RunCLI(ctx, service.CLIOptSetEnvironment(env))
//
// A batch is acknowledged to the pipeline only once every record in it is
// durable on the server, so the pipeline's own delivery guarantee holds. A
// record the server would refuse (checked with the server's own rules
// before anything is sent) or one too large for a call fails alone, as a
// service.BatchError, and a fallback or switch output can route it to a
// dead letter. A call that fails with its stream fails its messages, and
// the stream is opened again for the next batch.
package zbredpanda
