// Package zerobus is a drop-in for the official Databricks Zerobus Go SDK
// (github.com/databricks/zerobus-sdk/go), in pure Go: change the import
// line
//
//	import zerobus "github.com/zbstream/zbstream/zerobus"
//
// and a program written for the official SDK builds without cgo or a Rust
// toolchain (CGO_ENABLED=0, any GOOS/GOARCH Go supports) and runs as
// before. It matches the official Go SDK v1.7.0, the newest release in its
// go/CHANGELOG.md (v1.1.1 to v1.7.0 added the Nowait calls, the SDK
// options, a connection per stream by default, the Unity Catalog schema
// helpers and the Arrow Flight API, which this package has behind the
// arrow build tag):
// the same names, signatures, field names, defaults, payload types and
// error retryability.
//
//	sdk, err := zerobus.NewZerobusSdkWithOptions(zerobusEndpoint, workspaceURL,
//		zerobus.WithApplicationName("my-app/1.0"))
//	defer sdk.Free()
//	options := zerobus.DefaultStreamConfigurationOptions()
//	options.RecordType = zerobus.RecordTypeJson
//	stream, err := sdk.CreateStream(zerobus.TableProperties{TableName: "main.default.t"}, clientID, clientSecret, options)
//	defer stream.Close()
//	offset, err := stream.IngestRecordOffset(`{"id": 1}`) // []byte for a proto stream
//	err = stream.IngestRecordNowait(`{"id": 2}`)          // no offset, no waiting
//	err = stream.Flush()                                   // both are durable
//
// The package is a thin layer over zbstream's client (package
// github.com/zbstream/zbstream), which runs the protocol: streams are its
// ephemeral (at-least-once) streams, with its recovery, flow control and
// OAuth. What the official API lacks, persistent (exactly-once) streams,
// contexts, callbacks and statistics, is one call away:
// ZerobusSdk.Client (or ClientWithHeadersProvider) returns the SDK's
// shared *zbstream.Client for those credentials, and ZerobusStream.Stream
// the *zbstream.Stream underneath.
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
//   - SDK options: NewZerobusSdkWithOptions takes WithApplicationName
//     (trimmed; blank is ignored; a NUL byte or invalid UTF-8 is refused
//     with the official messages) and WithConnectionPerStream, on by
//     default: every stream has a gRPC connection of its own, made when it
//     is created and closed when it is closed. NewZerobusSdk is
//     NewZerobusSdkWithOptions without options.
//   - Nowait calls: IngestRecordNowait and IngestRecordsNowait return no
//     offset and do not wait; errors after the call are not reported to
//     the caller; the records take offsets of the stream like the others.
//   - Errors: every error is a *ZerobusError; Retryable() answers as the
//     official one does: creation failures never, others by the failure's
//     kind (gRPC INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED,
//     OUT_OF_RANGE, UNIMPLEMENTED and NOT_FOUND are not retryable, other
//     codes and timeouts are; misuse is not).
//   - Proxies: grpc_proxy, GRPC_PROXY, https_proxy, HTTPS_PROXY,
//     http_proxy, HTTP_PROXY (the first set), through HTTP CONNECT, with
//     TLS end to end; no_grpc_proxy, NO_GRPC_PROXY, no_proxy, NO_PROXY for
//     exceptions.
//   - Unity Catalog schemas: UcColumn and UcTableSchema (the tables API's
//     JSON, a column without "nullable" nullable), DescriptorFromUcColumns,
//     DescriptorFromUcSchema (its message named from schema and table:
//     SalesOrders), MessageDescriptorFromUcColumns and
//     MessageDescriptorFromUcSchema (a MessageDescriptor for dynamicpb and
//     the bytes for TableProperties.DescriptorProto), in every build (the
//     official SDK has them in its default build too): the official type
//     mapping, field numbers (position + 1), field and message names, the
//     names refused, and *SchemaError with the official Kind. The
//     descriptors are zbstream's (record.DescriptorFromColumnsWith), with
//     its checks; like the official SDK, this package has no call that
//     fetches a table's schema (zbstream's Client.TableDescriptor does).
//
// # Where it differs, and why
//
//   - The Arrow Flight API (Beta in the official SDK, in its default
//     build) is here behind the arrow build tag: build with -tags arrow to
//     use CreateArrowStream, CreateArrowStreamWithHeadersProvider,
//     ZerobusArrowStream, ArrowStreamConfigurationOptions,
//     DefaultArrowStreamConfigurationOptions, IPCCompressionType and its
//     constants, RecoverySetting, RecoveryEnabled and RecoveryDisabled,
//     with the official signatures, fields and defaults. Without the tag a
//     program that uses them does not build: the tag keeps Arrow (the
//     apache/arrow-go module) out of every other build of this package.
//     The stream underneath is zbstream's Flight client, the one of module
//     arrowstream (docs/protocol.md §12): a batch is split by rows into
//     frames of at most 2 MiB at ingest, and after a reconnect only the
//     rows not acknowledged are sent again. As with the other streams, the
//     backoff is drawn at random up to RecoveryBackoffMs, the bytes in
//     flight are bounded too (256 MiB), GetUnackedBatches works after
//     Close (the official SDK refuses it there), and nothing is freed by a
//     finalizer. RecoveryTimeoutMs bounds each connection attempt, and
//     ConnectionTimeoutMs the creation as a whole. A batch of another
//     schema than the stream's, or bytes that are not one IPC stream of one
//     batch, are refused at IngestBatch, not retryable, and the stream goes
//     on.
//   - Unity Catalog schemas, where the official SDK returns a descriptor
//     that protobuf (protoc, protobuf-go) refuses: a MAP that is a
//     struct's field has its entry message named as protobuf requires
//     (PropsEntry, not ShipToPropsEntry); a struct's message name taken by
//     a field gets the next number; no columns, a message name that is not
//     a proto identifier, two columns of one name or position, and a
//     position whose field number protobuf reserves are an Invalid
//     *SchemaError; so is a nil *UcTableSchema (the official SDK panics).
//     A type_json of another type than TypeName is InvalidTypeJson (the
//     official SDK reads the type_json alone); VARIANT inside a type_json
//     is a string (the official SDK refuses it); a type_json nests at most
//     64 deep (100). Fields carry no proto3_optional flag (the official
//     SDK sets one on optional fields of its proto2 message, which
//     protobuf allows in proto3 only). The MessageDescriptor is the proto2
//     message the bytes describe, as the server decodes records: a NOT
//     NULL column is required (proto.Marshal refuses a record without it)
//     and a nullable one has presence (a zero is sent); the official one
//     is a proto3 copy that leaves zeros out of the record and cannot be
//     made for a struct with a NOT NULL field. SchemaError.Field is also
//     set for Invalid errors, and the wording of Invalid and
//     InvalidTypeJson messages is zbstream's.
//   - Avro is in no official release up to v1.7.0: the official
//     repository has it in Beta, behind the avro build tag, with the names
//     of its current source. This package has the same: RecordTypeAvro in
//     every build, and, built with -tags avro, AvroTableProperties,
//     AvroRecord, Union, CreateAvroStream,
//     CreateAvroStreamWithHeadersProvider and the IngestAvroBytes* and
//     IngestAvroRecord* calls (Offset, BatchOffset or RecordsOffset,
//     Nowait), the record calls encoding with github.com/hamba/avro/v2 as
//     the official ones do. RecordTypeAvro given to CreateStream, which has
//     no schema to send, is an error; CreateAvroStream makes an Avro
//     stream whatever the options' RecordType says.
//   - Backoff: before each reconnect it waits a random time up to
//     RecoveryBackoffMs (full jitter), where the official SDK waits exactly
//     RecoveryBackoffMs, so that many clients that lost the same server do
//     not come back in step.
//   - Nothing is freed by a finalizer: call Free, and Close every stream (a
//     stream not closed keeps its goroutines). A finalizer would run Close,
//     which flushes over the network, at an arbitrary time.
//   - Free leaves the streams created from the SDK working, as with the
//     official SDK, whose streams hold their channel: a stream's own
//     connection is closed with the stream, and the shared ones once every
//     stream is closed (at once if none is open).
//   - Shared connections (WithConnectionPerStream(false)): one gRPC
//     connection per set of credentials (OAuth client id and secret, or
//     headers provider), not one per SDK, since a zbstream client
//     authenticates all its streams alike.
//   - OAuth tokens are cached per table by each client and refreshed before
//     they expire: a stream with a connection of its own requests one when
//     it opens and reuses it when it reconnects, and streams that share a
//     connection share it; the official SDK requests one at every stream
//     open and reconnect. The token request carries resource (the
//     workspace id) only when the endpoint's host starts with one, not for
//     an IP address or localhost.
//   - Nowait calls run no task per call. A call the stream has room for is
//     accepted before it returns; otherwise it waits in memory (without
//     bound, as the official SDK's tasks do) and a goroutine of the stream
//     hands the waiting calls over in call order, so Nowait calls land in
//     the order they were made (the official tasks may run in any order).
//     Flush and Close wait for the Nowait calls made before them; Close
//     returns a retryable error if some could not be handed over within
//     FlushTimeoutMs. A record of the other type than the stream's is an
//     error at once (the official SDK drops it silently). Nothing the
//     stream did not accept is lost silently: after a failure or Close,
//     GetUnackedRecords returns those records too, after the stream's
//     unacknowledged ones. A record the stream refuses for its size is
//     dropped, as the official SDK drops what it fails to ingest.
//   - In-flight bound: besides MaxInflightRequests, the bytes in flight are
//     bounded (256 MiB), the zbstream client's memory bound.
//   - GetUnackedRecords works after Close: the official Go SDK refuses it
//     there ("Stream has been closed"), and asks for it before Close. On a
//     stream still running it is refused, as in the official SDK.
//   - WaitForOffset of an offset never given to a call fails at once (not
//     retryable) instead of waiting FlushTimeoutMs for a timeout.
//   - A malformed endpoint is reported by NewZerobusSdk, not by every
//     CreateStream.
//   - A HeadersProvider may be called from several goroutines at once
//     (the official SDK refuses overlapping calls); its error fails the
//     open, not retryable, in both.
//   - The x-zerobus-sdk header and user agent name zbstream and its
//     version, not zerobus-sdk-go; the application name goes in front of
//     them ("my-app/1.0 zbstream/<version>", where the official SDK sends
//     "zerobus-sdk-go/<version> my-app/1.0"), in both headers. It must be
//     printable ASCII: the official SDK also takes other UTF-8 characters
//     and tabs. RUST_LOG has no effect (for logs, use Client and
//     zbstream.WithLogger on a client of your own).
//   - ZerobusError unwraps to the zbstream error behind it (errors.Is,
//     errors.As); the official one wraps nothing.
//
// For local runs without a workspace, `zbstream serve -oauth
// CLIENT_ID:SECRET` serves the workspace's token endpoint on its admin
// address: pass that URL as the workspace URL, and the server's endpoint
// (http://127.0.0.1:7443 by default) as the Zerobus endpoint.
//
// # Where each part lives
//
//	sdk.go           ZerobusSdk: NewZerobusSdk*, CreateStream*, Free
//	options.go       SdkOption, WithApplicationName, WithConnectionPerStream
//	clients.go       the shared zbstream clients, HeadersProvider
//	proxy.go         the official proxy environment variables
//	types.go         RecordType, StreamConfigurationOptions, TableProperties
//	streamopts.go    the official options as zbstream stream options
//	descriptor.go    TableProperties.DescriptorProto to a message type
//	stream.go        ZerobusStream: ingest, WaitForOffset, Flush, Close
//	nowait.go        IngestRecordNowait, IngestRecordsNowait
//	ack.go           RecordAck, the deprecated handle
//	errors.go        ZerobusError and the official retryability
//	avro.go          the Beta Avro API (built with the avro tag)
//	arrow_options.go the Arrow API's options and constants (the arrow tag)
//	arrow_stream.go  CreateArrowStream*, ZerobusArrowStream (the arrow tag)
//	uc_schema.go     UcColumn, UcTableSchema, SchemaError
//	uc_descriptor.go DescriptorFromUc*, MessageDescriptorFromUc*
//	uc_names.go      the official rule for column and field names
package zerobus
