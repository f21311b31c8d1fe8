// Package boundarytest holds end-to-end tests of what zbstream hands to code
// it does not own: gRPC's tracing, stats handlers and interceptors may keep
// a message after SendMsg returns and read it later, so every message the
// client gives gRPC must stay valid and unchanged for as long as anyone
// holds it (see the grpcio package doc).
//
// The tests live in a package of their own because they switch on
// grpc.EnableTracing, a process-wide setting, for the whole test binary
// (but for TestKeptMessagesUntraced, which runs each reader alone, with
// tracing off, in a child process: with no reader at all the client
// encodes into gRPC's buffer pool, so each reader must rule that out).
// CI runs them with and without the race detector: without it, a message
// that aliased the stream's off-heap record memory crashed the process when
// /debug/requests was rendered after the memory was given back; with it, a
// reused message raced with the renderer.
package boundarytest
