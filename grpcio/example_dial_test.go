package grpcio_test

import (
	"log"

	"github.com/zbstream/zbstream/grpcio"
	ingestpb "github.com/zbstream/zbstream/proto"
)

// ExampleDial connects to a Zerobus endpoint over TLS with the system
// roots, through the proxy HTTPS_PROXY names unless NO_PROXY exempts the
// host.
func ExampleDial() {
	cc, err := grpcio.Dial("https://1234567890123456.zerobus.us-west-2.cloud.databricks.com", grpcio.DialOptions{
		AppName: "orders-loader/1.4",
	})
	if err != nil {
		log.Fatal(err) // a *core.ConfigError: bad endpoint or options
	}
	defer cc.Close()
	client := ingestpb.NewZerobusClient(cc)
	_ = client // open streams with the table and authorization metadata
}
