package zbstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/zbstream/zbstream"
)

// DescriptorFromColumns turns a Unity Catalog table's columns into the
// proto message its records take; a NOT NULL column is required.
func ExampleDescriptorFromColumns() {
	desc, err := zbstream.DescriptorFromColumns([]zbstream.Column{
		{Name: "id", TypeName: "BIGINT", Position: 0},
		{Name: "placed at", TypeName: "TIMESTAMP", Position: 1, Nullable: true},
		{Name: "tags", TypeName: "ARRAY", TypeJSON: `{"type":"array","elementType":"string"}`, Position: 2, Nullable: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range desc.GetField() {
		fmt.Println(f.GetNumber(), f.GetName(), f.GetJsonName(), f.GetType(), f.GetLabel())
	}
	// Output:
	// 1 id id TYPE_INT64 LABEL_REQUIRED
	// 2 placed_at placed at TYPE_INT64 LABEL_OPTIONAL
	// 3 tags tags TYPE_STRING LABEL_REPEATED
}

// WithJSONToProto opens a proto stream of a table's descriptor that takes
// JSON: IngestJSON converts each object to the proto record, and refuses
// one that does not fit, naming the field, before anything is sent.
func ExampleWithJSONToProto() {
	srv, endpoint := startServer() // a local reference server, plaintext
	defer srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	client, err := zbstream.NewClient(endpoint, zbstream.WithToken("demo-token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	desc, err := zbstream.DescriptorFromColumns([]zbstream.Column{
		{Name: "seq", TypeName: "BIGINT", Position: 0},
		{Name: "note", TypeName: "STRING", Position: 1, Nullable: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := client.CreateStream(ctx, "main.demo.events", zbstream.WithJSONToProto(desc))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)

	off, err := s.IngestJSON(ctx, json.RawMessage(`{"seq": "9007199254740993", "note": "big"}`))
	fmt.Println("offset:", off, err)
	_, err = s.IngestJSON(ctx, map[string]any{"seq": 2, "note": 7})
	var ce *zbstream.ConvertError
	fmt.Println(errors.Is(err, zbstream.ErrRecordType), errors.As(err, &ce) && ce.Field == "note")
	if err := s.Close(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acknowledged:", s.Stats().Acknowledged)
	// Output:
	// offset: 0 <nil>
	// true true
	// acknowledged: 1
}

// TableDescriptor reads a table's schema from the workspace's Unity
// Catalog (here a stand-in) and returns its descriptor, kept for later
// calls; RefreshTableDescriptor reads it again after a schema change.
func ExampleClient_TableDescriptor() {
	workspace := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"name":"events","columns":[{"name":"seq","type_name":"LONG","position":0,"nullable":false}]}`)
	}))
	defer workspace.Close()
	client, err := zbstream.NewClient("http://127.0.0.1:1", zbstream.WithToken("demo-token"),
		zbstream.WithWorkspaceURL(workspace.URL))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	desc, err := client.TableDescriptor(context.Background(), "main.demo.events")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(desc.GetName(), desc.GetField()[0].GetName(), desc.GetField()[0].GetType())
	// Output:
	// events seq TYPE_INT64
}
