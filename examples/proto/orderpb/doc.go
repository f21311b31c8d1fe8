// Package orderpb holds the record type of the proto example, generated from
// order.proto by the project's pinned generator:
//
//	go generate ./examples/proto/orderpb
package orderpb

//go:generate go run -C ../../../internal/tools/protogen . -I ../../../examples/proto/orderpb -out ../../../examples/proto/orderpb order.proto
