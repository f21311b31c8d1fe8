package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/server/servertest"
)

// testMessage builds message zbtest.Event {int64 seq = 1; string name = 2;
// Inner inner = 3; message Inner {bool ok = 1;}} and writes its
// FileDescriptorSet to dir.
func testMessage(t *testing.T, dir string) (protoreflect.MessageDescriptor, string) {
	t.Helper()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("zbtest/event.proto"),
		Package: proto.String("zbtest"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Event"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("seq"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum(), JsonName: proto.String("seq")},
				{Name: proto.String("name"), Number: proto.Int32(2), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), JsonName: proto.String("name")},
				{Name: proto.String("inner"), Number: proto.Int32(3), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".zbtest.Event.Inner"), JsonName: proto.String("inner")},
			},
			NestedType: []*descriptorpb.DescriptorProto{{
				Name: proto.String("Inner"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("ok"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_BOOL.Enum(), JsonName: proto.String("ok")},
				},
			}},
		}},
	}
	// zbtest.Outer {Event event = 1;}: refers to a type not nested in it.
	fdp.MessageType = append(fdp.MessageType, &descriptorpb.DescriptorProto{
		Name: proto.String("Outer"),
		Field: []*descriptorpb.FieldDescriptorProto{
			{Name: proto.String("event"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum(), TypeName: proto.String(".zbtest.Event"), JsonName: proto.String("event")},
		},
	})
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatal(err)
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(fd)}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "event.pb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return fd.Messages().ByName("Event"), path
}

// writeProtoRecords writes n length-delimited zbtest.Event records and
// returns the file's path and the records.
func writeProtoRecords(t *testing.T, dir string, md protoreflect.MessageDescriptor, n int) (string, [][]byte) {
	t.Helper()
	var file bytes.Buffer
	var recs [][]byte
	fields := md.Fields()
	inner := fields.ByName("inner").Message()
	for i := range n {
		m := dynamicpb.NewMessage(md)
		m.Set(fields.ByName("seq"), protoreflect.ValueOfInt64(int64(i)))
		m.Set(fields.ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("event-%d", i)))
		if i%3 == 0 {
			in := dynamicpb.NewMessage(inner)
			in.Set(inner.Fields().ByName("ok"), protoreflect.ValueOfBool(true))
			m.Set(fields.ByName("inner"), protoreflect.ValueOfMessage(in))
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		file.Write(protowire.AppendVarint(nil, uint64(len(b))))
		file.Write(b)
		recs = append(recs, b)
	}
	path := filepath.Join(dir, "events.bin")
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, recs
}

func TestIngestProto(t *testing.T) {
	ts := servertest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	md, set := testMessage(t, dir)
	file, recs := writeProtoRecords(t, dir, md, 500)
	args := append(serverArgs(ts), "-proto-descriptor-set", set, "-proto-message", "zbtest.Event", "-batch-size", "16", file)
	code, out, _ := runIngestCmd(ctx, t, args...)
	if code != cli.ExitOK || !strings.Contains(out, "done: 500 records") {
		t.Fatalf("exit %d: %s", code, out)
	}
	st := readState(t, file+".zbstate")
	if st.Format != formatProto || st.ProtoMessage != "zbtest.Event" || st.Batches != 32 {
		t.Fatalf("state %+v", st)
	}
	got := stored(t, ts, st.StreamID)
	if len(got) != len(recs) {
		t.Fatalf("server holds %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if !bytes.Equal(got[i], recs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
	// A resume of the proto stream (as after a crash before the state said
	// done): it finds the watermark at the last call.
	st.Done = false
	if err := st.save(file + ".zbstate"); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runIngestCmd(ctx, t, args...); code != cli.ExitOK || !strings.Contains(out, "sent 0 records in 0 calls from watermark 31") {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	// Done: nothing more is sent.
	if code, out, _ := runIngestCmd(ctx, t, args...); code != cli.ExitOK || !strings.Contains(out, "already done") {
		t.Fatalf("second run: exit %d: %s", code, out)
	}
	// The same state with JSON flags: refused.
	code, _, errOut := runIngestCmd(ctx, t, append(serverArgs(ts), file)...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "was made for protobuf-delimited input") {
		t.Fatalf("format mismatch: exit %d: %s", code, errOut)
	}
}

func TestIngestProtoMalformed(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	md, set := testMessage(t, dir)
	file, recs := writeProtoRecords(t, dir, md, 10)
	full, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Byte offset of record 10 (the last, 1-based).
	last := len(full) - len(recs[9]) - 1
	for _, tc := range []struct {
		name    string
		content []byte
		msg     string
	}{
		{"truncated record", full[:len(full)-2], fmt.Sprintf("record 10 at byte offset %d: truncated: length %d, only %d bytes left", last, len(recs[9]), len(recs[9])-2)},
		{"truncated varint", append(bytes.Clone(full), 0x80), fmt.Sprintf("record 11 at byte offset %d: truncated length prefix", len(full))},
		{"not the message", append(bytes.Clone(full), 2, 0x0a, 0x05), fmt.Sprintf("record 11 at byte offset %d: not a valid zbtest.Event", len(full))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.bin")
			if err := os.WriteFile(path, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), "-proto-descriptor-set", set, "-proto-message", "zbtest.Event", path)...)
			if code != cli.ExitInput || !strings.Contains(errOut, tc.msg) {
				t.Fatalf("exit %d: %s\nwant %s", code, errOut, tc.msg)
			}
		})
	}
	if c := streamCount(t, ts); c != 0 {
		t.Fatalf("server has %d streams: something was sent", c)
	}
	// An unknown message, a missing descriptor set.
	code, _, errOut := runIngestCmd(context.Background(), t, append(serverArgs(ts), "-proto-descriptor-set", set, "-proto-message", "zbtest.Nope", file)...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "no such message") {
		t.Fatalf("unknown message: exit %d: %s", code, errOut)
	}
	code, _, _ = runIngestCmd(context.Background(), t, append(serverArgs(ts), "-proto-descriptor-set", filepath.Join(dir, "nope.pb"), "-proto-message", "zbtest.Event", file)...)
	if code != cli.ExitInput {
		t.Fatalf("missing descriptor set: exit %d", code)
	}
	code, _, errOut = runIngestCmd(context.Background(), t, append(serverArgs(ts), "-proto-descriptor-set", set, "-proto-message", "zbtest.Outer", file)...)
	if code != cli.ExitUsage || !strings.Contains(errOut, "field zbtest.Outer.event refers to zbtest.Event, which is not nested in zbtest.Outer") {
		t.Fatalf("message not self-contained: exit %d: %s", code, errOut)
	}
	if c := streamCount(t, ts); c != 0 {
		t.Fatalf("server has %d streams: something was sent", c)
	}
}

// TestIngestProtoInterrupt: a proto ingestion stopped mid-way resumes the
// proto stream and completes it exactly once.
func TestIngestProtoInterrupt(t *testing.T) {
	ts := servertest.Start(t)
	dir := t.TempDir()
	md, set := testMessage(t, dir)
	file, recs := writeProtoRecords(t, dir, md, 6000)
	args := append(serverArgs(ts), "-proto-descriptor-set", set, "-proto-message", "zbtest.Event",
		"-batch-size", "2", "-max-inflight", "8", "-progress", "5ms", file)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOnProgress{cancel: cancel}
	var out bytes.Buffer
	if code := cmds.Run(ctx, append([]string{"ingest"}, args...), &out, w); code != cli.ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s%s", code, cli.ExitInterrupted, out.String(), w.buf.String())
	}
	code, stdout, _ := runIngestCmd(context.Background(), t, args...)
	if code != cli.ExitOK || !strings.Contains(stdout, "from watermark") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	got := stored(t, ts, readState(t, file+".zbstate").StreamID)
	if len(got) != len(recs) {
		t.Fatalf("server holds %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if !bytes.Equal(got[i], recs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}
