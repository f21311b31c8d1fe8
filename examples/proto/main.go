// Command proto ingests records of a generated protobuf message type
// (orderpb.Order) into a persistent stream: the stream is described to the
// server by the message's descriptor, nested types included, and every
// record is a serialized Order.
//
//	go run ./examples/proto
package main

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/protobuf/proto"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/examples/internal/target"
	"github.com/zbstream/zbstream/examples/proto/orderpb"
)

func main() {
	ctx := context.Background()
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

	s, err := client.CreatePersistentStream(ctx, tg.Table, zbstream.WithProtoMessage(&orderpb.Order{}))
	if err != nil {
		log.Fatal(err)
	}
	batch := make([]zbstream.ProtoMessage, 0, 10)
	for i := range 10 {
		batch = append(batch, &orderpb.Order{
			Id:       proto.Int64(int64(i)),
			Customer: proto.String(fmt.Sprintf("customer-%d", i%3)),
			Status:   orderpb.Order_PLACED.Enum(),
			Lines:    []*orderpb.Order_Line{{Sku: proto.String("sku-1"), Quantity: proto.Int32(2)}},
		})
	}
	off, err := s.IngestProtoBatch(ctx, batch) // one call, one offset, ten records
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Wait(ctx, off); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stream %s: 10 orders durable at offset %d\n", s.StreamID(), off)
}
