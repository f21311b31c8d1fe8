// Package server is zbstream's reference Zerobus-compatible server: both
// stream kinds and RetireStream over gRPC, durable storage with group
// commit, bearer-token authentication and per-table authorization, TLS,
// session rotation and programmable fault injection. Users can run it in
// their own tests (see package servertest) to test ingestion code without a
// cloud account.
package server
