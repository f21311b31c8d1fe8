// Package streams is "zbstream streams": list, show, print or retire a
// server's streams, through its admin endpoint (package admin) and gRPC,
// or straight from a bolt data directory with -data.
//
// Where things are:
//
//	streams.go  Run, the subcommands and their flags
//	source.go   where they read: the admin endpoint or a data directory
package streams
