// Package e2e holds zbstream's end-to-end tests: the public client (the
// module root, package zbstream) over real gRPC on loopback against the
// reference server (package server/servertest) and its fault injection.
// Every §8 scenario, exactly-once under faults with reads back, hostile
// acks and watermarks, session rotation, TLS with a test CA, a real CONNECT
// proxy, OAuth against a token endpoint, and child processes killed with
// SIGKILL and resumed by id (the test binary re-executes itself as the
// child). BenchmarkEndToEnd measures the client beside a raw gRPC stream.
//
// The tests use only the client's exported API, as an application would;
// they live apart from the root so that the root's own folder shows the
// client, its runnable examples and the checks of its API and imports.
// It has no non-test code. Run the tests and the benchmark with
//
//	go test -race ./e2e
//	go test ./e2e -run '^$' -bench 'EndToEnd/.*/ackonly' -benchtime 2s -count 6
package e2e
