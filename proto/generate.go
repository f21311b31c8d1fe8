// Package ingestpb holds the wire contract of the Zerobus ingest service,
// zerobus_service.proto (protobuf package databricks.zerobus), and the Go code
// generated from it: the messages and the Zerobus gRPC client and server.
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

//go:generate go run -C ../internal/tools/protogen . -I ../../../proto -out ../../../proto zerobus_service.proto
