// Package officialpb is a test fixture: a second, independent copy of the
// Zerobus contract generated under the official names, as the official SDK
// or an application's own stubs of the official zerobus_service.proto
// register it: file zerobus_service.proto, proto package databricks.zerobus.
//
// It is generated from proto/zerobus_service.proto by the same pinned
// generator as package ingestpb, with -package databricks.zerobus in place
// of the project's own package and without ingestpb's -path-prefix. Its
// messages are the service's contract (TestCanonicalContract holds
// ingestpb's .proto to it). What matters for the tests is the registration: the same path and full names as the
// official code, which is what collides in the protobuf registry. The
// comments the generated files copy from the .proto describe ingestpb's
// names, not this package's.
//
// Tests link it beside package ingestpb (and the client and server built on
// it) to show that both load into one program, and use its client against
// the reference server to show that the wire of the two is the same. It is
// not for use outside tests. .ci/check-generated keeps it current.
package officialpb

//go:generate go run -C ../tools/protogen . -I ../../../proto -package databricks.zerobus -M zerobus_service.proto=github.com/zbstream/zbstream/internal/officialpb;officialpb -out ../../officialpb zerobus_service.proto
