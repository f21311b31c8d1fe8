package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
)

// headerWait bounds how long a test waits for response headers. It is a
// liveness bound, not a measurement: a server that waits for the first
// message never sends them (FirstMessageTimeout is set far above it), so
// such a server fails here however fast the machine is.
const headerWait = 10 * time.Second

// awaitHeader calls Header() the way the official Rust core does before
// it sends create_stream, and fails the test if the headers do not come.
func awaitHeader(t *testing.T, header func() (metadata.MD, error)) {
	t.Helper()
	got := make(chan error, 1)
	go func() { _, err := header(); got <- err }()
	timer := time.NewTimer(headerWait)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Header: %v", err)
		}
	case <-timer.C:
		t.Fatalf("no response headers within %v before the first message", headerWait)
	}
}

// A client that waits for the response headers before it sends anything
// (the official SDKs) opens both stream kinds, and sees the server's
// refusals as statuses, not as its own open timeout.
func TestHeadersBeforeFirstMessage(t *testing.T) {
	ts := startServer(t,
		servertest.WithPrincipal("tok-other", server.Principal{Name: "other", Tables: []string{"main.other.t"}}),
		servertest.WithOptions(func(o *server.Options) { o.FirstMessageTimeout = 10 * time.Minute }))
	c := ts.Client(t)
	ctx := func(token string) context.Context {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		t.Cleanup(cancel)
		return servertest.OutgoingContext(ctx, token, ts.Table)
	}

	t.Run("persistent create and resume", func(t *testing.T) {
		st := openPersistent(t, c, ctx(ts.Token))
		awaitHeader(t, st.Header)
		psend(t, st, pcreateReq(jsonCreate(ts.Table)))
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		id := r.GetCreateStreamResponse().GetStreamId()
		pjson(t, st, 0, `{"a":1}`)
		pwaitAck(t, st, 0)
		pclose(t, st)

		st = openPersistent(t, c, ctx(ts.Token))
		awaitHeader(t, st.Header)
		psend(t, st, presumeReq(id, ingestpb.RecordType_JSON, nil))
		r, err = st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if w := r.GetResumeStreamResponse().LastCommittedOffset; w == nil || *w != 0 {
			t.Fatalf("resume answered %v", r)
		}
		pclose(t, st)
	})
	t.Run("ephemeral create", func(t *testing.T) {
		st, err := c.EphemeralStream(ctx(ts.Token))
		if err != nil {
			t.Fatal(err)
		}
		awaitHeader(t, st.Header)
		esend(t, st, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: jsonCreate(ts.Table)}})
		if r, err := st.Recv(); err != nil || r.GetCreateStreamResponse().GetStreamId() == "" {
			t.Fatalf("create: %v %v", r, err)
		}
		ejson(t, st, 0, `{}`)
		ewaitAck(t, st, 0)
		st.CloseSend()
		if err := eend(st); err != nil {
			t.Fatal(err)
		}
	})
	badDescriptor := &ingestpb.CreateIngestStreamRequest{TableName: proto.String(ts.Table),
		RecordType: ingestpb.RecordType_PROTO.Enum(), DescriptorProto: []byte{0xff, 0xff}}
	for _, tc := range []struct {
		name  string
		token string
		cr    *ingestpb.CreateIngestStreamRequest
		code  codes.Code
	}{
		{"permission denied", "tok-other", jsonCreate(ts.Table), codes.PermissionDenied},
		{"bad descriptor", ts.Token, badDescriptor, codes.InvalidArgument},
	} {
		t.Run(tc.name+"/persistent", func(t *testing.T) {
			st := openPersistent(t, c, ctx(tc.token))
			awaitHeader(t, st.Header)
			psend(t, st, pcreateReq(tc.cr))
			_, err := pend(t, st)
			wantCode(t, err, tc.code)
		})
		t.Run(tc.name+"/ephemeral", func(t *testing.T) {
			st, err := c.EphemeralStream(ctx(tc.token))
			if err != nil {
				t.Fatal(err)
			}
			awaitHeader(t, st.Header)
			esend(t, st, &ingestpb.EphemeralStreamRequest{Payload: &ingestpb.EphemeralStreamRequest_CreateStream{CreateStream: tc.cr}})
			wantCode(t, eend(st), tc.code)
		})
	}
}
