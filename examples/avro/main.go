// Command avro ingests records into a table over an Avro stream: the
// stream's create carries the writer schema, and every record is one raw
// Avro binary datum of it. zbstream itself decodes no Avro (the records
// are bytes to it); the application encodes them with the Avro library of
// its choice, here github.com/hamba/avro/v2.
//
//	go run ./examples/avro
//
// It runs against an in-process reference server unless ZBSTREAM_ENDPOINT,
// ZBSTREAM_TOKEN and ZBSTREAM_TABLE name another one ("zbstream serve").
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/hamba/avro/v2"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/examples/internal/target"
)

// schemaJSON is the records' writer schema: an Avro record schema.
const schemaJSON = `{"type": "record", "name": "Click", "namespace": "acme",
 "fields": [{"name": "seq", "type": "long"}, {"name": "page", "type": "string"},
            {"name": "referrer", "type": ["null", "string"], "default": null}]}`

// click is one record; the avro tags name the schema's fields.
type click struct {
	Seq      int64   `avro:"seq"`
	Page     string  `avro:"page"`
	Referrer *string `avro:"referrer"`
}

const total = 100

func main() {
	ctx := context.Background()
	schema, err := avro.Parse(schemaJSON)
	if err != nil {
		log.Fatal(err)
	}
	tg, err := target.Get()
	if err != nil {
		log.Fatal(err)
	}
	defer tg.Close()
	client, err := zbstream.NewClient(tg.Endpoint, zbstream.WithToken(tg.Token))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	s, err := client.CreatePersistentStream(ctx, tg.Table, zbstream.WithAvroSchema(schemaJSON))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("created Avro stream %s (record type %s)\n", s.StreamID(), s.RecordType())
	home := "/home"
	for i := range int64(total) {
		c := click{Seq: i, Page: fmt.Sprintf("/item/%d", i)}
		if i%2 == 0 {
			c.Referrer = &home
		}
		datum, err := avro.Marshal(schema, c)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := s.IngestRecord(ctx, datum); err != nil {
			log.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done: %d Avro records durable, last offset %d\n", s.Stats().Acknowledged, s.LastDurable())
}
