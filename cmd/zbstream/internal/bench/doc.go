// Package bench is "zbstream bench": the zbstream client beside a raw gRPC
// client with the same settings, in the same run, against the reference
// server; a table, CSV and SVG of records/s by record size and mode. With
// -rss it measures a child process's peak memory, with -recovery the time
// until acks flow again after a fault, with -format arrow the rows/s and
// client CPU per row of the same rows as Arrow batches beside JSON lines.
//
// Where things are:
//
//	bench.go     Run and the flags
//	run.go       one table run: every cell, every round, both clients
//	rounds.go    a cell and its rounds, interleaved
//	stats.go     median and spread of the rounds
//	output.go    the table and CSV
//	svg.go       the chart
//	rss.go       -rss: a child process's peak RSS
//	recovery.go  -recovery: time until acks flow again
//	arrow.go     -format arrow: its run, flags and table
//	arrow_clients.go  the rows, as Arrow and as JSON, and the Arrow client
//	serve_child.go    the server in a process of its own (zbstream serve)
package bench
