package zerobus_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zbstream/zbstream"
	zerobus "github.com/zbstream/zbstream/zerobus"
)

// captureServer is a gRPC server that answers every call with
// PERMISSION_DENIED (which the client does not retry) and reports the
// headers of the calls it saw.
func captureServer(t *testing.T) (endpoint string, headers <-chan metadata.MD) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan metadata.MD, 16)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		select {
		case got <- md:
		default:
		}
		return status.Error(codes.PermissionDenied, "headers captured")
	}))
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return "http://" + lis.Addr().String(), got
}

// sentHeaders opens a stream of an SDK made with opts against a capture
// server and returns the user agent and the x-zerobus-sdk header sent.
func sentHeaders(t *testing.T, opts ...zerobus.SdkOption) (userAgent, sdkHeader string) {
	t.Helper()
	endpoint, headers := captureServer(t)
	sdk, err := zerobus.NewZerobusSdkWithOptions(endpoint, "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	_, err = sdk.CreateStreamWithHeadersProvider(zerobus.TableProperties{TableName: testTable}, &staticProvider{token: "t", table: testTable}, jsonOptions())
	if ze := asZerobus(t, err); ze.Retryable() || !strings.Contains(ze.Message, "headers captured") {
		t.Fatalf("create against the capture server: %v", err)
	}
	md := <-headers
	return strings.Join(md.Get("user-agent"), ","), strings.Join(md.Get("x-zerobus-sdk"), ",")
}

// TestApplicationName: the name, trimmed, goes in front of zbstream's own
// in the user agent and the x-zerobus-sdk header of the stream's calls; a
// blank one, and none, leave zbstream's alone; the last one given wins, a
// nil option is skipped; and an SDK with a name ingests as any other.
func TestApplicationName(t *testing.T) {
	own := "zbstream/" + zbstream.Version
	for _, c := range []struct {
		name string
		opts []zerobus.SdkOption
		want string
	}{
		{"none", nil, own},
		{"named", []zerobus.SdkOption{zerobus.WithApplicationName("my-app/1.0")}, "my-app/1.0 " + own},
		{"trimmed", []zerobus.SdkOption{zerobus.WithApplicationName("  my-app/1.0 (linux)\n")}, "my-app/1.0 (linux) " + own},
		{"blank", []zerobus.SdkOption{zerobus.WithApplicationName(" \t ")}, own},
		{"last wins, nil skipped", []zerobus.SdkOption{zerobus.WithApplicationName("first"), nil, zerobus.WithApplicationName("second")}, "second " + own},
	} {
		ua, sdkHeader := sentHeaders(t, c.opts...)
		if sdkHeader != c.want || !strings.HasPrefix(ua, c.want+" grpc-go/") {
			t.Errorf("%s: user-agent %q, x-zerobus-sdk %q; want %q in both", c.name, ua, sdkHeader, c.want)
		}
	}

	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdkWithOptions(l.Endpoint, l.Workspace, zerobus.WithApplicationName("my-app/1.0"))
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.IngestRecordOffset(`{"app": "my-app"}`); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := storedRecords(t, l.Server, testTable); len(got) != 1 || string(got[0]) != `{"app": "my-app"}` {
		t.Fatalf("stored %q", got)
	}
}

// TestApplicationNameRefused: a name that cannot travel in a header is a
// non-retryable *ZerobusError of NewZerobusSdkWithOptions that says why,
// with the official messages where the official SDK has one.
func TestApplicationNameRefused(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"app\x00name", "application name must not contain a NUL byte"},
		{"app\xffname", "application name must be valid UTF-8"},
		{"café", `application name "café" is not a valid header value: it must be printable ASCII`},
		{"a\tb", `application name "a\tb" is not a valid header value: it must be printable ASCII`},
		{"a\x7fb", `application name "a\x7fb" is not a valid header value: it must be printable ASCII`},
	} {
		sdk, err := zerobus.NewZerobusSdkWithOptions("http://127.0.0.1:1", "", zerobus.WithApplicationName(c.name))
		if sdk != nil {
			t.Errorf("%q: an SDK", c.name)
		}
		if ze := asZerobus(t, err); ze.Retryable() || ze.Message != c.want {
			t.Errorf("%q: %v, want a non-retryable %q", c.name, err, c.want)
		}
	}
	// A malformed endpoint still says so.
	if _, err := zerobus.NewZerobusSdkWithOptions("http://[::1", "", zerobus.WithApplicationName("ok")); err == nil || asZerobus(t, err).Retryable() {
		t.Errorf("malformed endpoint: %v", err)
	}
}

// TestConnectionPerStream: by default each stream has a connection of its
// own, closed with it; WithConnectionPerStream(false) makes the streams of
// the same credentials share one, closed by Free once they are closed; the
// last option given wins. Every record lands once either way.
func TestConnectionPerStream(t *testing.T) {
	for _, c := range []struct {
		name      string
		opts      []zerobus.SdkOption
		perStream bool
	}{
		{"default", nil, true},
		{"on", []zerobus.SdkOption{zerobus.WithConnectionPerStream(true)}, true},
		{"off", []zerobus.SdkOption{zerobus.WithConnectionPerStream(false)}, false},
		{"last wins", []zerobus.SdkOption{zerobus.WithConnectionPerStream(false), zerobus.WithConnectionPerStream(true)}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := startLocalT(t)
			sdk, err := zerobus.NewZerobusSdkWithOptions(l.Endpoint, l.Workspace, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer sdk.Free()
			const streams = 3
			var sts []*zerobus.ZerobusStream
			for i := range streams {
				st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.IngestRecordOffset(fmt.Sprintf(`{"stream": %d}`, i)); err != nil {
					t.Fatal(err)
				}
				sts = append(sts, st)
			}
			want := int64(1)
			if c.perStream {
				want = streams
			}
			if got := l.Conns.accepted.Load(); got != want {
				t.Fatalf("%d connections for %d streams, want %d", got, streams, want)
			}
			if err := sts[0].Close(); err != nil {
				t.Fatal(err)
			}
			if c.perStream {
				eventually(t, "the closed stream's connection to close", func() bool { return l.Conns.open.Load() == streams-1 })
			}
			for _, st := range sts[1:] {
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if c.perStream {
				eventually(t, "every connection to close", func() bool { return l.Conns.open.Load() == 0 })
			} else if got := l.Conns.open.Load(); got != 1 {
				t.Fatalf("%d connections open before Free, want the shared one", got)
			}
			sdk.Free()
			eventually(t, "every connection to close after Free", func() bool { return l.Conns.open.Load() == 0 })
			if got := len(storedRecords(t, l.Server, testTable)); got != streams {
				t.Fatalf("stored %d records, want %d", got, streams)
			}
		})
	}
}
