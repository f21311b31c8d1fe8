// Command zbredpanda is Redpanda Connect's engine (Benthos) with its pure
// and io components and the zerobus output:
//
//	zbredpanda run config.yaml
//	zbredpanda lint config.yaml
//
// See the module's README for the output's configuration.
package main

import (
	"context"
	"fmt"
	"os"

	_ "github.com/redpanda-data/benthos/v4/public/components/io"
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	zbredpanda "github.com/zbstream/zbstream/contrib/redpanda"
)

func main() {
	env := service.NewEnvironment()
	if err := zbredpanda.Register(env); err != nil {
		fmt.Fprintln(os.Stderr, "zbredpanda:", err)
		os.Exit(1)
	}
	service.RunCLI(context.Background(), service.CLIOptSetEnvironment(env), service.CLIOptSetBinaryName("zbredpanda"))
}
