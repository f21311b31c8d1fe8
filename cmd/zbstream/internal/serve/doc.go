// Package serve is "zbstream serve": the reference server (package server)
// as a process, on the durable bolt engine or in memory, with bearer tokens
// or OAuth clients, TLS, a memory limit derived from its receive budget,
// and the read-only admin endpoint (package admin) that "zbstream streams"
// reads.
//
// Where things are:
//
//	serve.go   Run, the flags, listeners and shutdown
//	tokens.go  -token, -token-file and -oauth: principals and their tables
//	memory.go  the Go memory limit the receive budget implies
package serve
