package e2e_test

// A Unity Catalog table end to end: the reference server given the
// table's definition (servertest.WithTables) serves it as a workspace's
// tables API does, Client.TableDescriptor reads it from there, a stream
// opened WithJSONToProto ingests JSON records (the server checks each
// against the columns), a record that does not fit is refused without
// harm to the stream, and the stored proto records decode back to the
// values sent.

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/record"
	"github.com/zbstream/zbstream/server/servertest"
)

// ucOrders is the Unity Catalog answer for the table: a NOT NULL BIGINT,
// a timestamp, a date, binary, a struct, an array of structs and a map.
const ucOrders = `{"full_name":"%s","columns":[
 {"name":"id","type_name":"LONG","position":0,"nullable":false},
 {"name":"customer name","type_name":"STRING","position":1},
 {"name":"placed_at","type_name":"TIMESTAMP","position":2},
 {"name":"ship_on","type_name":"DATE","position":3},
 {"name":"total","type_name":"DECIMAL","type_json":"{\"name\":\"total\",\"type\":\"decimal(10,2)\",\"nullable\":true,\"metadata\":{}}","position":4},
 {"name":"sig","type_name":"BINARY","position":5},
 {"name":"addr","type_name":"STRUCT","type_json":"{\"name\":\"addr\",\"type\":{\"type\":\"struct\",\"fields\":[{\"name\":\"zip\",\"type\":\"integer\",\"nullable\":false,\"metadata\":{}},{\"name\":\"city\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]},\"nullable\":true,\"metadata\":{}}","position":6},
 {"name":"items","type_name":"ARRAY","type_json":"{\"name\":\"items\",\"type\":{\"type\":\"array\",\"elementType\":{\"type\":\"struct\",\"fields\":[{\"name\":\"sku\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},{\"name\":\"qty\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]},\"containsNull\":true},\"nullable\":true,\"metadata\":{}}","position":7},
 {"name":"attrs","type_name":"MAP","type_json":"{\"name\":\"attrs\",\"type\":{\"type\":\"map\",\"keyType\":\"string\",\"valueType\":\"double\",\"valueContainsNull\":true},\"nullable\":true,\"metadata\":{}}","position":8}
]}`

func TestJSONToProtoStream(t *testing.T) {
	table, err := record.ParseTableSchema(fmt.Appendf(nil, ucOrders, servertest.DefaultTable))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, servertest.WithTables(table))
	client, err := zbstream.NewClient("http://"+e.ts.Addr, zbstream.WithToken(e.ts.Token), zbstream.WithWorkspaceURL(e.ts.WorkspaceURL))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	desc, err := client.TableDescriptor(ctx(t), e.table)
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.CreatePersistentStream(ctx(t), e.table, fast(zbstream.WithJSONToProto(desc))...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx(t))

	type item struct {
		SKU string `json:"sku"`
		Qty int64  `json:"qty"`
	}
	sent := []any{
		json.RawMessage(`{"id":1,"customer name":"Ada","placed_at":1700000000123456,"ship_on":19723,"total":"12.30",
			"sig":"AP8=","addr":{"zip":94105,"city":"SF"},"items":[{"sku":"a","qty":2},{"sku":"b"}],"attrs":{"w":1.5}}`),
		[]byte(`{"id":"9007199254740993","items":[],"attrs":{}}`),
		map[string]any{"id": 3, "customer name": nil, "items": []item{{SKU: "c", Qty: 1 << 40}}},
	}
	for i, v := range sent {
		if off, err := s.IngestJSON(ctx(t), v); err != nil || off != int64(i) {
			t.Fatalf("IngestJSON %d: %d, %v", i, off, err)
		}
	}
	// Refused before it is queued, the field named; the stream goes on.
	_, err = s.IngestJSON(ctx(t), json.RawMessage(`{"id":4,"addr":{"zip":"x"}}`))
	var ce *zbstream.ConvertError
	if !errors.Is(err, zbstream.ErrRecordType) || !errors.As(err, &ce) || ce.Field != "addr.zip" || ce.Fault != record.FaultWrongType {
		t.Fatalf("bad record: %v", err)
	}
	if _, err := s.IngestJSON(ctx(t), map[string]any{"customer name": "no id"}); !errors.As(err, &ce) || ce.Fault != record.FaultMissing {
		t.Fatalf("record without its NOT NULL column: %v", err)
	}
	if off, err := s.IngestJSON(ctx(t), map[string]any{"id": 5}); err != nil || off != 3 {
		t.Fatalf("IngestJSON after the refusals: %d, %v", off, err)
	}
	sent = append(sent, map[string]any{"id": 5})
	if err := s.Close(ctx(t)); err != nil {
		t.Fatal(err)
	}

	// The stored records decode, with the stream's descriptor, to what
	// protojson reads from the JSON sent.
	raw, err := proto.Marshal(desc)
	if err != nil {
		t.Fatal(err)
	}
	md, err := record.MessageDescriptor(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got []*dynamicpb.Message
	for _, b := range e.stored(t, s.StreamID()) {
		for _, r := range b.Records {
			m := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(r, m); err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("%d records stored, want %d", len(got), len(sent))
	}
	for i, v := range sent {
		js, ok := v.([]byte)
		if rm, isRaw := v.(json.RawMessage); isRaw {
			js, ok = rm, true
		}
		if !ok {
			if js, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		want := dynamicpb.NewMessage(md)
		if err := (protojson.UnmarshalOptions{}).Unmarshal(js, want); err != nil {
			t.Fatalf("protojson %d: %v", i, err)
		}
		if !proto.Equal(got[i], want) {
			t.Errorf("record %d: stored %v, sent %v", i, got[i], want)
		}
	}
	// And a few values by hand.
	f := md.Fields()
	if got[0].Get(f.ByName("customer_name")).String() != "Ada" || got[1].Get(f.ByName("id")).Int() != 9007199254740993 ||
		string(got[0].Get(f.ByName("sig")).Bytes()) != "\x00\xff" || got[0].Get(f.ByName("placed_at")).Int() != 1700000000123456 {
		t.Errorf("record 0: %v; record 1: %v", got[0], got[1])
	}
}
