// Command uctable ingests JSON objects into a Unity Catalog table as proto
// records, with nothing but the table's name and OAuth credentials: the
// client reads the table's schema from the workspace
// (Client.TableDescriptor), opens a proto stream of it (WithJSONToProto),
// and converts each object before it is queued; one that does not fit the
// table is refused at once, naming the field, and the stream goes on.
//
//	go run ./examples/uctable
//
// It runs against an in-process reference server given the table's
// definition (server.Options.Tables), which serves it as a workspace does
// and checks every record against it, unless ZBSTREAM_ENDPOINT,
// ZBSTREAM_WORKSPACE_URL, ZBSTREAM_CLIENT_ID, ZBSTREAM_CLIENT_SECRET and
// ZBSTREAM_TABLE name another one, e.g. a workspace, or
//
//	zbstream serve -engine memory -tables orders.json -oauth etl:secret
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/record"
	"github.com/zbstream/zbstream/server"
)

// ordersTable is the table's definition as the Unity Catalog tables API
// returns it: a NOT NULL id, a timestamp, and an array of structs.
const ordersTable = `{"name": "orders", "catalog_name": "main", "schema_name": "sales",
 "full_name": "main.sales.orders", "columns": [
  {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "nullable": false},
  {"name": "customer", "type_name": "STRING", "type_text": "string", "position": 1},
  {"name": "placed_at", "type_name": "TIMESTAMP", "type_text": "timestamp", "position": 2},
  {"name": "lines", "type_name": "ARRAY", "type_text": "array<struct<sku:string,qty:int>>", "position": 3,
   "type_json": "{\"name\":\"lines\",\"type\":{\"type\":\"array\",\"elementType\":{\"type\":\"struct\",\"fields\":[{\"name\":\"sku\",\"type\":\"string\",\"nullable\":false,\"metadata\":{}},{\"name\":\"qty\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]},\"containsNull\":false},\"nullable\":true,\"metadata\":{}}"}
 ]}`

// order is one record; the json tags name the table's columns.
type order struct {
	ID       int64  `json:"id"`
	Customer string `json:"customer,omitempty"`
	PlacedAt int64  `json:"placed_at"` // microseconds since the epoch
	Lines    []line `json:"lines,omitempty"`
}

type line struct {
	SKU string `json:"sku"`
	Qty int32  `json:"qty"`
}

const total = 20

func main() {
	ctx := context.Background()
	w, err := workspace()
	if err != nil {
		log.Fatal(err)
	}
	defer w.stop()
	client, err := zbstream.NewClient(w.endpoint, zbstream.WithOAuth(w.url, w.clientID, w.secret))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	desc, err := client.TableDescriptor(ctx, w.table)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("table %s: message %s with %d fields\n", w.table, desc.GetName(), len(desc.GetField()))
	s, err := client.CreatePersistentStream(ctx, w.table, zbstream.WithJSONToProto(desc))
	if err != nil {
		log.Fatal(err)
	}
	for i := range int64(total) {
		o := order{ID: i, Customer: fmt.Sprintf("c%d", i%3), PlacedAt: 1_700_000_000_000_000 + i}
		if i%2 == 0 {
			o.Lines = []line{{SKU: "a-1", Qty: int32(i)}}
		}
		if _, err := s.IngestJSON(ctx, o); err != nil {
			log.Fatal(err)
		}
	}
	// A line without its NOT NULL sku does not fit: refused before it is
	// queued, the field named; the stream goes on.
	_, err = s.IngestJSON(ctx, map[string]any{"id": 99, "lines": []map[string]any{{"qty": 1}}})
	var ce *zbstream.ConvertError
	if !errors.As(err, &ce) {
		log.Fatalf("a record without its sku was taken: %v", err)
	}
	fmt.Printf("refused: field %s: %v\n", ce.Field, ce.Fault)
	if err := s.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done: %d proto records durable in %s, last offset %d\n", s.Stats().Acknowledged, w.table, s.LastDurable())
}

// target is where to ingest: a Zerobus endpoint, its workspace and OAuth
// credentials for the table.
type target struct {
	endpoint, url, clientID, secret, table string
	stop                                   func()
}

// workspace returns the target the environment names, or starts one in
// this process: a reference server that knows ordersTable, with a token
// endpoint and the tables API on an HTTP listener beside it.
func workspace() (*target, error) {
	if ep := os.Getenv("ZBSTREAM_ENDPOINT"); ep != "" {
		return &target{endpoint: ep, url: os.Getenv("ZBSTREAM_WORKSPACE_URL"), clientID: os.Getenv("ZBSTREAM_CLIENT_ID"),
			secret: os.Getenv("ZBSTREAM_CLIENT_SECRET"), table: os.Getenv("ZBSTREAM_TABLE"), stop: func() {}}, nil
	}
	schema, err := record.ParseTableSchema([]byte(ordersTable))
	if err != nil {
		return nil, err
	}
	tables, err := server.NewTables(schema)
	if err != nil {
		return nil, err
	}
	auth := server.NewAuth(nil)
	const id, secret = "etl", "example-secret"
	tokens, err := server.NewTokenEndpoint(auth, []server.OAuthClient{{ID: id, Secret: secret, Tables: []string{schema.FullName}}}, server.TokenEndpointOptions{})
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Options{Auth: auth, Tables: tables})
	if err != nil {
		return nil, err
	}
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	httpLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		grpcLis.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(server.TokenPath, tokens)
	mux.Handle(server.TablesPath, server.NewTablesHandler(tables, auth))
	hs := &http.Server{Handler: mux}
	go srv.Serve(grpcLis)
	go hs.Serve(httpLis)
	fmt.Fprintf(os.Stderr, "(no ZBSTREAM_ENDPOINT: using a reference server in this process at %s, its workspace at %s)\n", grpcLis.Addr(), httpLis.Addr())
	return &target{
		endpoint: "http://" + grpcLis.Addr().String(), url: "http://" + httpLis.Addr().String(),
		clientID: id, secret: secret, table: schema.FullName,
		stop: func() { hs.Close(); srv.Stop() },
	}, nil
}
