package clitest

import (
	"net"
	"testing"
)

// Two tables the tests write to.
const (
	TableA = "main.default.a"
	TableB = "main.default.b"
)

// FreeAddr returns a loopback address nobody listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}
