// Package zbstream is a Go client for Zerobus streaming ingestion: it
// writes records into tables over a bidirectional gRPC stream, with
// ephemeral streams (at-least-once) and persistent streams (exactly-once
// across reconnects and process restarts).
//
//	client, err := zbstream.NewClient("https://<workspace>.zerobus.<region>.cloud.databricks.com",
//		zbstream.WithOAuth(workspaceURL, clientID, clientSecret))
//	defer client.Close()
//
//	s, err := client.CreatePersistentStream(ctx, "main.sales.orders")
//	saveStreamID(s.StreamID())                 // keep it: a new process resumes by id
//	off, err := s.IngestJSON(ctx, order)       // the record's offset, once accepted
//	err = s.Wait(ctx, off)                     // durable on the server
//	err = s.Close(ctx)                         // flush, then end the connection
//
// # Exactly-once
//
// A persistent stream is created once and resumed by id after every
// reconnect, in this process or another. On resume the server reports its
// last committed offset W: records at or below W complete locally (their
// waits and callbacks fire, once), only those above W are sent again, under
// their original offsets, and a new process continues numbering at W+1.
// What the application keeps is the stream id and, for each offset, where
// in its source the record came from: after a restart it resumes with
// ResumeStream, reads LastDurable, and replays its source from the record
// after W. Closing a stream never retires it; RetireStream does.
//
// An ephemeral stream resends everything unacknowledged after a reconnect,
// so a record can land twice; it is the official Zerobus contract.
//
// # Errors
//
// Errors are typed and wrapped: errors.Is works with ErrClosed,
// ErrStreamFailed, ErrRecordType, ErrCallTooLarge and the rest, and
// errors.As with *ConfigError, *LimitError, *ProtocolError, *RetryError,
// *TLSError and *ConnectionError, whose cause is the gRPC status error. A
// stream that fails stays failed; its undelivered records stay in Unacked.
// A message says "zbstream: " once, at its start, however deep the chain:
// an error that shows another inside its own message drops the inner one's
// prefix (see core.Prefix).
//
// The package is a thin layer: package io runs the protocol core (package
// core) over package grpcio's transport, and Stream delegates to its
// Stream.
package zbstream
