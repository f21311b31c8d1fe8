package spool_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/server"
	"github.com/zbstream/zbstream/server/servertest"
	"github.com/zbstream/zbstream/spool"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// avroSchema's datums are one zigzag varint: the long n. Small n encode
// as the single byte 2n, so the tests need no Avro library (and the spool
// has none).
const avroSchema = `{"type":"record","name":"N","fields":[{"name":"n","type":"long"}]}`

func avroN(n int) []byte { return []byte{byte(2 * n)} }

// TestAvroSpool: an Avro stream's records go through the spool as any
// others do: logged, sent, and after a reopen whatever the server lacks
// is sent again, once; the spool keeps the schema and a reopen with
// another is a *MismatchError.
func TestAvroSpool(t *testing.T) {
	ts := servertest.Start(t)
	c := newClient(t, ts)
	dir := t.TempDir()
	withAvro := func(o *spool.Options) { o.AvroSchema = avroSchema }
	sp := openSpool(t, c, dir, ts.Table, withAvro)
	id := sp.StreamID()
	ctx := context.Background()
	if _, err := sp.IngestRecord(ctx, avroN(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.IngestBatch(ctx, [][]byte{avroN(1), avroN(2)}); err != nil {
		t.Fatal(err)
	}
	if err := sp.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Calls the server never gets: only the log has them.
	h := ts.Inject(server.Match{StreamID: id}, server.Fault{Kind: server.FaultDrop, After: 0, Times: server.Unlimited})
	for i := 3; i < 6; i++ {
		if _, err := sp.IngestRecord(ctx, avroN(i)); err != nil {
			t.Fatal(err)
		}
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_ = sp.Close(gone)
	h.Remove()

	sp = openSpool(t, c, dir, ts.Table, withAvro)
	closeSpool(t, sp)
	got := stored(t, ts.Server, id)
	want := map[int64][][]byte{0: {avroN(0)}, 1: {avroN(1), avroN(2)}, 2: {avroN(3)}, 3: {avroN(4)}, 4: {avroN(5)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("server holds %v, want %v", got, want)
	}
	if m, err := ts.Stream(ctx, id); err != nil || m.AvroSchema != avroSchema {
		t.Fatalf("stream %+v, %v: want the spool's schema", m, err)
	}

	for name, o := range map[string]spool.Options{
		"Avro schema": {Dir: dir, Table: ts.Table, AvroSchema: `{"type":"record","name":"M","fields":[]}`},
		"record type": {Dir: dir, Table: ts.Table},
	} {
		var me *spool.MismatchError
		if _, err := spool.Open(ctx, c, o); !errors.As(err, &me) || me.Field != name {
			t.Errorf("reopen with another %s: %v", name, err)
		}
	}
	var ce *zbstream.ConfigError
	if _, err := spool.Open(ctx, c, spool.Options{Dir: t.TempDir(), Table: ts.Table, AvroSchema: avroSchema,
		ProtoMessage: &wrapperspb.StringValue{}}); !errors.As(err, &ce) || ce.Field != "AvroSchema" {
		t.Errorf("AvroSchema with ProtoMessage: %v, want a *ConfigError", err)
	}
}
