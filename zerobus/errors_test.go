package zerobus_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/zbstream/zbstream"
	zerobus "github.com/zbstream/zbstream/zerobus"
)

// jsonOptions are JSON options with one open attempt and no recovery, so
// that failures come at once.
func jsonOptions() *zerobus.StreamConfigurationOptions {
	o := zerobus.DefaultStreamConfigurationOptions()
	o.RecordType = zerobus.RecordTypeJson
	o.Recovery = false
	o.RecoveryRetries = 1
	o.RecoveryTimeoutMs = 5_000
	return o
}

// asZerobus returns err as a *ZerobusError or fails the test.
func asZerobus(t *testing.T, err error) *zerobus.ZerobusError {
	t.Helper()
	ze, ok := err.(*zerobus.ZerobusError)
	if !ok {
		t.Fatalf("error %T %v, want a *zerobus.ZerobusError", err, err)
	}
	return ze
}

// staticProvider sends a fixed token, as a custom provider written for the
// official SDK does.
type staticProvider struct{ token, table string }

func (p *staticProvider) GetHeaders() (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + p.token, "x-databricks-zerobus-table-name": p.table}, nil
}

// failingProvider fails every call.
type failingProvider struct{}

func (failingProvider) GetHeaders() (map[string]string, error) {
	return nil, errors.New("no credentials today")
}

// TestCreateErrors: the failures of stream creation are *ZerobusError with
// the official answer, which is never retryable.
func TestCreateErrors(t *testing.T) {
	l := startLocalT(t)
	// An address nobody listens on.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + lis.Addr().String()
	lis.Close()

	// A token of the local workspace, minted for testTable only.
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()

	for _, c := range []struct {
		name     string
		endpoint string
		create   func(*zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error)
		want     string
	}{
		{"table outside the grant", l.Endpoint, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			return s.CreateStream(zerobus.TableProperties{TableName: otherTable}, testClientID, testClientSecret, jsonOptions())
		}, "invalid_authorization_details"},
		{"bad secret", l.Endpoint, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			return s.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, "wrong", jsonOptions())
		}, "invalid_client"},
		{"unreachable endpoint", unreachable, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			return s.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
		}, "UNAVAILABLE"},
		{"unreachable endpoint, with recovery", unreachable, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			o := jsonOptions()
			o.Recovery, o.RecoveryRetries, o.RecoveryBackoffMs = true, 2, 10
			return s.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, o)
		}, "UNAVAILABLE"},
		{"headers provider error", l.Endpoint, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			return s.CreateStreamWithHeadersProvider(zerobus.TableProperties{TableName: testTable}, failingProvider{}, jsonOptions())
		}, "no credentials today"},
		{"proto without descriptor", l.Endpoint, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			return s.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, nil)
		}, "Proto descriptor is required"},
		{"descriptor not a DescriptorProto", l.Endpoint, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			return s.CreateStream(zerobus.TableProperties{TableName: testTable, DescriptorProto: []byte{0xff}}, testClientID, testClientSecret, nil)
		}, "not a serialized DescriptorProto"},
		{"unknown record type", l.Endpoint, func(s *zerobus.ZerobusSdk) (*zerobus.ZerobusStream, error) {
			o := jsonOptions()
			o.RecordType = 7
			return s.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, o)
		}, "Record type is not specified"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := zerobus.NewZerobusSdk(c.endpoint, l.Workspace)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Free()
			st, err := c.create(s)
			if err == nil {
				st.Close()
				t.Fatal("the stream was created")
			}
			ze := asZerobus(t, err)
			if ze.Retryable() || ze.IsRetryable {
				t.Errorf("%v: retryable, want not (the official SDK reports creation failures so)", err)
			}
			if !strings.Contains(ze.Message, c.want) {
				t.Errorf("message %q, want it to mention %q", ze.Message, c.want)
			}
		})
	}

	// A token scoped to testTable, presented for another table.
	tok := &tokenProvider{t: t, workspace: l.Workspace}
	_, err = sdk.CreateStreamWithHeadersProvider(zerobus.TableProperties{TableName: otherTable}, &staticProvider{token: tok.mint(testTable), table: otherTable}, jsonOptions())
	var ce *zbstream.ConnectionError
	if ze := asZerobus(t, err); ze.Retryable() || !errors.As(err, &ce) || ce.Code.String() != "PERMISSION_DENIED" {
		t.Fatalf("a token used outside its scope: %v", err)
	}

	// After Free, no stream.
	s2, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	s2.Free()
	s2.Free()
	_, err = s2.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
	if ze := asZerobus(t, err); ze.Retryable() || ze.Message != "SDK has been freed" {
		t.Fatalf("after Free: %v", err)
	}
	if _, err := s2.Client(testClientID, testClientSecret); err == nil {
		t.Fatal("Client after Free succeeded")
	}
}

// TestNewZerobusSdkEndpoints: the endpoint forms the official SDK takes.
func TestNewZerobusSdkEndpoints(t *testing.T) {
	for _, ep := range []string{
		"https://1234567890.zerobus.us-west-2.cloud.databricks.com",
		"1234567890.zerobus.us-west-2.cloud.databricks.com",
		"http://127.0.0.1:7443",
		"127.0.0.1:7443",
	} {
		s, err := zerobus.NewZerobusSdk(ep, "https://example.cloud.databricks.com")
		if err != nil {
			t.Errorf("%s: %v", ep, err)
			continue
		}
		s.Free()
	}
	_, err := zerobus.NewZerobusSdk("https://host/with/path", "")
	if ze := asZerobus(t, err); ze.Retryable() {
		t.Fatalf("malformed endpoint: %v", err)
	}
}

// TestStreamErrors: misuse of an open stream, a closed one and a failed
// one give *ZerobusError with the official answers.
func TestStreamErrors(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		call func() (int64, error)
		want string
	}{
		"proto bytes into JSON": {func() (int64, error) { return st.IngestRecordOffset([]byte{8, 1}) }, "Record type does not match"},
		"int payload":           {func() (int64, error) { return st.IngestRecordOffset(42) }, "Invalid payload type"},
		"empty bytes":           {func() (int64, error) { return st.IngestRecordOffset([]byte{}) }, "empty data"},
		"mixed batch":           {func() (int64, error) { return st.IngestRecordsOffset([]interface{}{`{}`, []byte{1}}) }, "same type (string)"},
		"mixed batch, bytes":    {func() (int64, error) { return st.IngestRecordsOffset([]interface{}{[]byte{1}, `{}`}) }, "same type ([]byte)"},
		"bytes batch into JSON": {func() (int64, error) { return st.IngestRecordsOffset([]interface{}{[]byte{1}}) }, "Record type does not match"},
		"batch of ints":         {func() (int64, error) { return st.IngestRecordsOffset([]interface{}{1}) }, "Invalid payload type"},
	} {
		off, err := c.call()
		if ze := asZerobus(t, err); off != -1 || ze.Retryable() || !strings.Contains(ze.Message, c.want) {
			t.Errorf("%s: %d, %v; want -1 and a non-retryable %q", name, off, err, c.want)
		}
	}
	if off, err := st.IngestRecordsOffset(nil); off != -1 || err != nil {
		t.Errorf("empty batch: %d, %v; want -1, nil", off, err)
	}
	if _, err := st.GetUnackedRecords(); err == nil || asZerobus(t, err).Retryable() {
		t.Errorf("GetUnackedRecords on an active stream: %v", err)
	}
	ack, err := st.IngestRecord(`{"a": 1}`)
	if err != nil {
		t.Fatal(err)
	}
	if off, err := ack.Offset(); off != 0 || err != nil {
		t.Fatalf("Offset: %d %v", off, err)
	}
	if off, err := ack.Await(); off != 0 || err != nil {
		t.Fatalf("Await: %d %v", off, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"ingest":  second(st.IngestRecordOffset(`{}`)),
		"batch":   second(st.IngestRecordsOffset([]interface{}{`{}`})),
		"wait":    st.WaitForOffset(0),
		"flush":   st.Flush(),
		"ingest2": second(st.IngestRecord(`{}`)),
	} {
		if ze := asZerobus(t, err); ze.Retryable() || ze.Message != "Stream has been closed" {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if recs, err := st.GetUnackedRecords(); err != nil || recs == nil || len(recs) != 0 {
		t.Errorf("GetUnackedRecords after a clean Close: %v %v", recs, err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestStreamFailure: a stream the server ends with a non-retryable status
// fails with a non-retryable *ZerobusError and hands back its records; one
// it ends with a retryable status, with recovery off, with a retryable one.
func TestStreamFailure(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable}, testClientID, testClientSecret, jsonOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Not a JSON object: the server refuses the call (INVALID_ARGUMENT).
	off, err := st.IngestRecordsOffset([]interface{}{`{"ok": 1}`, `not json`})
	if err != nil {
		t.Fatal(err)
	}
	err = st.WaitForOffset(off)
	if ze := asZerobus(t, err); ze.Retryable() {
		t.Fatalf("a refused record: %v, want not retryable", err)
	}
	err = st.Close()
	if ze := asZerobus(t, err); ze.Retryable() || !errors.Is(err, err.(*zerobus.ZerobusError).Unwrap()) {
		t.Fatalf("Close of the failed stream: %v", err)
	}
	recs, err := st.GetUnackedRecords()
	if err != nil || len(recs) != 2 || recs[0] != `{"ok": 1}` || recs[1] != "not json" {
		t.Fatalf("unacked after the failure: %#v %v", recs, err)
	}
}

// TestGetUnackedAfterFailure: after a failure, before Close, the records
// are handed back too (the official SDK's documented use).
func TestGetUnackedAfterFailure(t *testing.T) {
	l := startLocalT(t)
	sdk, err := zerobus.NewZerobusSdk(l.Endpoint, l.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Free()
	st, err := sdk.CreateStream(zerobus.TableProperties{TableName: testTable, DescriptorProto: orderDescriptor()}, testClientID, testClientSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	off, err := st.IngestRecordOffset([]byte{0xff, 0xff}) // not a valid message
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WaitForOffset(off); err == nil {
		t.Fatal("an invalid message was acknowledged")
	}
	<-st.Stream().Done()
	recs, err := st.GetUnackedRecords()
	if err != nil || len(recs) != 1 || string(recs[0].([]byte)) != "\xff\xff" {
		t.Fatalf("unacked: %#v %v", recs, err)
	}
}
