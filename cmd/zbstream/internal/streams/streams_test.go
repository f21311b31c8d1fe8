package streams

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/cmd/zbstream/internal/admin"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/clitest"
	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/server"
)

// TestStreamsUsage: help exits 0, bad subcommands, flags and arguments 2.
func TestStreamsUsage(t *testing.T) {
	for _, tc := range []struct {
		code int
		args []string
		msg  string
	}{
		{cli.ExitOK, []string{"-h"}, "Subcommands:"},
		{cli.ExitOK, []string{"help"}, "Subcommands:"},
		{cli.ExitOK, []string{"list", "-h"}, "-admin"},
		{cli.ExitOK, []string{"records", "-h"}, "-from"},
		{cli.ExitOK, []string{"retire", "-h"}, "-endpoint"},
		{cli.ExitUsage, nil, "missing subcommand"},
		{cli.ExitUsage, []string{"bogus"}, "unknown subcommand"},
		{cli.ExitUsage, []string{"show"}, "want one stream ID"},
		{cli.ExitUsage, []string{"records", "a", "b"}, "want one stream ID"},
		{cli.ExitUsage, []string{"list", "extra"}, "unexpected argument"},
		{cli.ExitUsage, []string{"list", "-nope"}, "flag provided but not defined"},
		{cli.ExitUsage, []string{"list", "-data", "d", "-admin", "http://127.0.0.1:1"}, "excludes"},
		{cli.ExitUsage, []string{"records", "ps-x", "-limit", "-1"}, "negative"},
		{cli.ExitUsage, []string{"list", "-admin", "ftp://127.0.0.1:1"}, "want http://"},
		{cli.ExitUsage, []string{"retire", "ps-x", "-table", "notatable", "-endpoint", "http://127.0.0.1:1"}, "catalog.schema.table"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, _, errs := cmds.RunCmd(t, append([]string{"streams"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errs, tc.msg) {
				t.Fatalf("exit %d, want %d; stderr should contain %q:\n%s", code, tc.code, tc.msg, errs)
			}
		})
	}
}

// TestStreamsUnreachable: no server behind the admin URL or endpoint
// exits 4.
func TestStreamsUnreachable(t *testing.T) {
	addr := "http://" + clitest.FreeAddr(t)
	for _, args := range [][]string{
		{"list", "-admin", addr},
		{"show", "ps-x", "-admin", addr},
		{"records", "ps-x", "-admin", addr},
		{"retire", "ps-x", "-admin", addr},
		{"retire", "ps-x", "-table", clitest.TableA, "-endpoint", addr},
		{"retire", "ps-x", "-table", clitest.TableA, "-endpoint", addr, "-token", "t"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			code, _, errs := cmds.RunCmd(t, append([]string{"streams"}, args...)...)
			if code != cli.ExitUnreachable || !strings.Contains(errs, "unreachable") {
				t.Fatalf("exit %d, want %d:\n%s", code, cli.ExitUnreachable, errs)
			}
		})
	}
}

// TestStreamsDataDir reads and retires streams in a bolt directory with no
// server running.
func TestStreamsDataDir(t *testing.T) {
	// One batch a page: the command must follow next to the end.
	defer func(n int) { dataPageBytes = n }(dataPageBytes)
	dataPageBytes = 1
	dir := t.TempDir()
	cmds.WantCode(t, cli.ExitInput, "streams", "list", "-data", filepath.Join(dir, "missing"))

	data := filepath.Join(dir, "data")
	st, err := server.OpenBoltStore(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ps, _, err := st.CreateStream(ctx, server.StreamMeta{ID: "ps-1", Kind: server.KindPersistent, Table: clitest.TableA,
		Principal: "alice", RecordType: int32(ingestpb.RecordType_PROTO), Descriptor: []byte{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, ps.ID, []server.Batch{{Offset: 0, Records: [][]byte{{0xff, 0x00}, {0x01}}}, {Offset: 1, Records: [][]byte{{0x02}}}}); err != nil {
		t.Fatal(err)
	}
	es, _, err := st.CreateStream(ctx, server.StreamMeta{ID: "es-1", Kind: server.KindEphemeral, Table: clitest.TableB,
		Principal: "bob", RecordType: int32(ingestpb.RecordType_JSON)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	out := cmds.WantCode(t, 0, "streams", "list", "-data", data)
	if !strings.Contains(out, "ps-1") || !strings.Contains(out, "es-1") || !strings.Contains(out, "ephemeral") {
		t.Fatalf("list:\n%s", out)
	}
	out = cmds.WantCode(t, 0, "streams", "show", "-data", data, "ps-1")
	if !strings.Contains(out, "proto") || !strings.Contains(out, "3 bytes") || !strings.Contains(out, "records:") {
		t.Fatalf("show:\n%s", out)
	}
	b64 := base64.StdEncoding.EncodeToString
	out = cmds.WantCode(t, 0, "streams", "records", "-data", data, "ps-1")
	if want := b64([]byte{0xff, 0}) + "\n" + b64([]byte{1}) + "\n" + b64([]byte{2}) + "\n"; out != want {
		t.Fatalf("records: %q, want %q", out, want)
	}
	// -limit counts offsets: the batch at offset 0 prints whole.
	out = cmds.WantCode(t, 0, "streams", "records", "-data", data, "ps-1", "-limit", "1", "-json")
	var lines []admin.RecordInfo
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r admin.RecordInfo
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		lines = append(lines, r)
	}
	if len(lines) != 2 || lines[1].Offset != 0 || lines[1].Index != 1 || string(lines[1].Data) != "\x01" {
		t.Fatalf("records -limit 1 -json: %+v", lines)
	}
	cmds.WantCode(t, cli.ExitFailure, "streams", "show", "-data", data, "ps-none")
	cmds.WantCode(t, cli.ExitFailure, "streams", "retire", "-data", data, es.ID)
	out = cmds.WantCode(t, 0, "streams", "retire", "-data", data, ps.ID)
	if !strings.Contains(out, "last committed offset 1") {
		t.Fatalf("retire:\n%s", out)
	}
	out = cmds.WantCode(t, 0, "streams", "show", "-data", data, "ps-1")
	if !strings.Contains(out, "retired") {
		t.Fatalf("show after retire:\n%s", out)
	}
}

// TestStreamsAvro: show names an Avro stream's type and schema, and
// records prints its records decoded as JSON, one a line.
func TestStreamsAvro(t *testing.T) {
	const schema = `{"type": "record", "name": "Click", "fields": [{"name": "user", "type": "string"}, {"name": "n", "type": "long"}]}`
	data := filepath.Join(t.TempDir(), "data")
	st, err := server.OpenBoltStore(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := st.CreateStream(ctx, server.StreamMeta{ID: "ps-avro", Kind: server.KindPersistent, Table: clitest.TableA,
		Principal: "alice", RecordType: int32(ingestpb.RecordType_AVRO), AvroSchema: schema}); err != nil {
		t.Fatal(err)
	}
	ann := []byte{0x06, 'a', 'n', 'n', 0x02} // {"user":"ann","n":1}
	bob := []byte{0x06, 'b', 'o', 'b', 0x03} // {"user":"bob","n":-2}
	if err := st.Append(ctx, "ps-avro", []server.Batch{{Offset: 0, Records: [][]byte{ann}}, {Offset: 1, Records: [][]byte{bob, ann}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out := cmds.WantCode(t, 0, "streams", "show", "-data", data, "ps-avro")
	for _, want := range []string{"avro\n", `{"type":"record","name":"Click","fields":[{"name":"user","type":"string"},{"name":"n","type":"long"}]}` + "\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show: no %q in\n%s", want, out)
		}
	}
	out = cmds.WantCode(t, 0, "streams", "list", "-data", data)
	if !strings.Contains(out, "avro") {
		t.Fatalf("list:\n%s", out)
	}
	out = cmds.WantCode(t, 0, "streams", "records", "-data", data, "ps-avro")
	if want := `{"user":"ann","n":1}` + "\n" + `{"user":"bob","n":-2}` + "\n" + `{"user":"ann","n":1}` + "\n"; out != want {
		t.Fatalf("records: %q, want %q", out, want)
	}
	out = cmds.WantCode(t, 0, "streams", "records", "-data", data, "ps-avro", "-from", "1", "-json")
	var r admin.RecordInfo
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &r); err != nil || r.Offset != 1 || string(r.JSON) != `{"user":"bob","n":-2}` {
		t.Fatalf("records -json: %v %+v\n%s", err, r, out)
	}
}
