// Package ingestpb holds the wire contract of the Zerobus ingest service,
// zerobus_service.proto, and the Go code generated from it: the messages and
// the Zerobus gRPC client and server.
//
// # Names
//
// On the wire the contract is the official one: the service is
// databricks.zerobus.Zerobus, its methods are
// /databricks.zerobus.Zerobus/EphemeralStream, .../PersistentStream and
// .../RetireStream (Zerobus_ServiceDesc, the FullMethodName constants), and
// the messages have the official field numbers and types.
//
// In the Go protobuf registry the contract has names of its own: the file
// is zbstream/zerobus_service.proto (File_zbstream_zerobus_service_proto)
// and its messages and enum are in the proto package zbstream.zerobus.v1,
// e.g. zbstream.zerobus.v1.IngestRecordResponse. The official generated
// code registers zerobus_service.proto and databricks.zerobus.*; protobuf-go
// panics at start when two linked-in files share a path or a full name, so
// with the official names a program could not link zbstream beside the
// official SDK or its own stubs of the official proto. Message names never
// travel on the wire, so renaming them changes nothing a server sees.
//
// The generator does the split: -path-prefix zbstream/ registers the file
// under its own path, and -grpc-package databricks.zerobus has the gRPC
// code generated as if the service were in the official package, while the
// .proto itself declares zbstream.zerobus.v1. The one place where the two
// names meet is the registered service descriptor, named
// zbstream.zerobus.v1.Zerobus: gRPC server reflection, were it turned on,
// would not find databricks.zerobus.Zerobus in it.
//
// # Regenerating
//
// The generated files are committed. After editing the .proto, regenerate
// them from the repository root with
//
//	go generate ./proto/...
//
// which needs only Go and the module proxy: the compiler and the plugins are
// pinned by internal/tools/protogen/go.mod, not taken from the system.
// .ci/check-generated fails when the committed files are stale.
package ingestpb

//go:generate go run -C ../internal/tools/protogen . -I ../../../proto -path-prefix zbstream/ -grpc-package databricks.zerobus -out ../../../proto zerobus_service.proto
