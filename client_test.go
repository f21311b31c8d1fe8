package zbstream_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
	"github.com/zbstream/zbstream/grpcio"
)

// TestCallContext: the metadata a stream of another kind opens with (its
// connection is Conn) is the client's own streams': the token, the table,
// the SDK; a provider that names another table is refused, and a failing
// provider is UNAUTHENTICATED.
func TestCallContext(t *testing.T) {
	c, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.Conn().(*grpc.ClientConn); !ok {
		t.Fatalf("Conn() is %T", c.Conn())
	}
	ctx, err := c.CallContext(context.Background(), "main.sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	for k, want := range map[string]string{"authorization": "Bearer tok", grpcio.HeaderTable: "main.sales.orders"} {
		if got := md.Get(k); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got := md.Get(grpcio.HeaderSDK); len(got) != 1 || got[0] == "" {
		t.Errorf("%s = %q, want the SDK", grpcio.HeaderSDK, got)
	}

	other, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithHeadersProvider(grpcio.HeadersFunc(func(context.Context) (map[string]string, error) {
		return map[string]string{grpcio.HeaderTable: "main.sales.other"}, nil
	})))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var ce *zbstream.ConfigError
	if _, err := other.CallContext(context.Background(), "main.sales.orders"); !errors.As(err, &ce) {
		t.Fatalf("a provider naming another table: %v, want a *ConfigError", err)
	}

	failing, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithHeadersProvider(grpcio.HeadersFunc(func(context.Context) (map[string]string, error) {
		return nil, errors.New("no credentials today")
	})))
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	var conn *zbstream.ConnectionError
	if _, err := failing.CallContext(context.Background(), "main.sales.orders"); !errors.As(err, &conn) || conn.Code != core.CodeUnauthenticated {
		t.Fatalf("a failing provider: %v, want UNAUTHENTICATED", err)
	}
	failing.InvalidateCredentials("main.sales.orders") // a HeadersFunc has nothing to drop
}
