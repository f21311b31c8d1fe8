// Package contract is the Zerobus service's contract as a field table, for
// tests: every message, field, number, type, oneof, reserved number and
// name, the enum and the service, as the service's canonical schema has
// them (docs/protocol.md §1 and §3). Two uses hold zbstream
// to it: TestCanonicalContract renders proto/zerobus_service.proto the same
// way and fails on any difference, and File builds a descriptor from the
// table alone, under which the e2e tests decode every message the client
// sends and find no field the service does not know.
//
// It is written from the canonical schema, not generated from it: a change
// of the service's contract is a change of this table, made on purpose.
package contract
