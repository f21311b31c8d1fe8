// Package zerobus is a drop-in for the official Databricks Zerobus Go SDK
// (github.com/databricks/zerobus-sdk/go), in pure Go: change the import
// line
//
//	import zerobus "github.com/zbstream/zbstream/zerobus"
//
// and a program written for the official SDK builds without cgo or a Rust
// toolchain (CGO_ENABLED=0, any GOOS/GOARCH Go supports) and runs as
// before. It matches the official Go SDK v1.0.0 (its NEXT_CHANGELOG, v1.1.0,
// lists no change yet): the same names, signatures, field names, defaults,
// payload types and error retryability.
//
//	sdk, err := zerobus.NewZerobusSdk(zerobusEndpoint, workspaceURL)
//	defer sdk.Free()
//	options := zerobus.DefaultStreamConfigurationOptions()
//	options.RecordType = zerobus.RecordTypeJson
//	stream, err := sdk.CreateStream(zerobus.TableProperties{TableName: "main.default.t"}, clientID, clientSecret, options)
//	defer stream.Close()
//	offset, err := stream.IngestRecordOffset(`{"id": 1}`) // []byte for a proto stream
//	err = stream.WaitForOffset(offset)
//
// The package is a thin layer over zbstream's client (package
// github.com/zbstream/zbstream), which runs the protocol: streams are its
// ephemeral (at-least-once) streams, with its recovery, flow control and
// OAuth. What the official API lacks, persistent (exactly-once) streams,
// contexts, callbacks and statistics, is one call away:
// ZerobusSdk.Client (or ClientWithHeadersProvider) returns the
// *zbstream.Client the SDK uses for those credentials, and
// ZerobusStream.Stream the *zbstream.Stream underneath.
//
// # As in the official SDK
//
//   - Endpoints: "https://<workspace-id>.zerobus.<region>.cloud.databricks.com",
//     the same without a scheme (https:// is assumed), or http://host:port
//     for a server without TLS (the only way to turn TLS off, as in the
//     official SDK, which has no other option for it).
//   - OAuth: CreateStream posts the client credentials (HTTP Basic) to
//     <workspace URL>/oidc/v1/token for a token down-scoped to the table
//     (scope all-apis, authorization_details naming it).
//   - Payloads: a string is a JSON record, a []byte a serialized message
//     of TableProperties.DescriptorProto; nothing else (not a
//     proto.Message). Batches are all strings or all []byte.
//   - Options: nil means the defaults; a zero field takes its default;
//     Recovery false needs a non-zero recovery number beside it.
//   - Errors: every error is a *ZerobusError; Retryable() answers as the
//     official one does: creation failures never, others by the failure's
//     kind (gRPC INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED,
//     OUT_OF_RANGE, UNIMPLEMENTED and NOT_FOUND are not retryable, other
//     codes and timeouts are; misuse is not).
//   - Proxies: grpc_proxy, GRPC_PROXY, https_proxy, HTTPS_PROXY,
//     http_proxy, HTTP_PROXY (the first set), through HTTP CONNECT, with
//     TLS end to end; no_grpc_proxy, NO_GRPC_PROXY, no_proxy, NO_PROXY for
//     exceptions.
//   - There is no application-name option in the official Go API (v1.0.0),
//     so none here.
//
// # Where it differs, and why
//
//   - Backoff: before each reconnect it waits a random time up to
//     RecoveryBackoffMs (full jitter), where the official SDK waits exactly
//     RecoveryBackoffMs, so that many clients that lost the same server do
//     not come back in step.
//   - Nothing is freed by a finalizer: call Free, and Close every stream (a
//     stream not closed keeps its goroutines). A finalizer would run Close,
//     which flushes over the network, at an arbitrary time.
//   - Free closes the SDK's connections once the streams created from it
//     are closed (at once if none is open); streams open at Free keep
//     working, as with the official SDK, whose streams hold their channel.
//   - Connections: one gRPC connection per set of credentials (OAuth
//     client id and secret, or headers provider), not one per SDK, since a
//     zbstream client authenticates all its streams alike.
//   - OAuth tokens are cached per table and refreshed before they expire,
//     where the official SDK requests one at every stream open and
//     reconnect. The token request carries resource (the workspace id)
//     only when the endpoint's host starts with one, not for an IP
//     address or localhost.
//   - In-flight bound: besides MaxInflightRequests, the bytes in flight are
//     bounded (256 MiB), the zbstream client's memory bound.
//   - GetUnackedRecords works after Close: the official Go SDK refuses it
//     there ("Stream has been closed") although its documentation shows it
//     used after a failed Close. On a stream still running it is refused,
//     as in the official SDK.
//   - WaitForOffset of an offset never given to a call fails at once (not
//     retryable) instead of waiting FlushTimeoutMs for a timeout.
//   - A malformed endpoint is reported by NewZerobusSdk, not by every
//     CreateStream.
//   - A HeadersProvider may be called from several goroutines at once
//     (the official SDK refuses overlapping calls); its error fails the
//     open, not retryable, in both.
//   - The x-zerobus-sdk header and user agent name zbstream and its
//     version, not the official Rust core; RUST_LOG has no effect (for
//     logs, use Client and zbstream.WithLogger on a client of your own).
//   - ZerobusError unwraps to the zbstream error behind it (errors.Is,
//     errors.As); the official one wraps nothing.
//
// For local runs without a workspace, `zbstream serve -oauth
// CLIENT_ID:SECRET` serves the workspace's token endpoint on its admin
// address: pass that URL as the workspace URL, and the server's endpoint
// (http://127.0.0.1:7443 by default) as the Zerobus endpoint.
package zerobus
