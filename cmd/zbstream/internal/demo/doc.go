// Package demo is "zbstream demo": exactly-once delivery shown under real
// faults. The demo runs the reference server and a client as child
// processes of this same binary (cli.RoleCommand), lets the server drop
// connections and lose acks after commit, SIGKILLs both, then reads the
// server's durable data back and checks every record is there once
// (persistent streams) or at least once (-ephemeral). -spool runs the
// client through a spool instead.
//
// Where things are:
//
//	demo.go          Run, the flags, the orchestrator and its children
//	server.go        the server child: bolt engine, fault schedule
//	client.go        the client child: the source records, its reports
//	read.go          reading the stored data one batch at a time
//	read_bolt.go     ... from the server's bolt file, in windows
//	verify.go        the check: duplicates, losses, order
//	rss.go           peak RSS of every process (package proc)
//	spool.go         -spool: the orchestrator's side
//	spool_client.go  -spool: the client child
//	spool_verify.go  -spool: the check
package demo
