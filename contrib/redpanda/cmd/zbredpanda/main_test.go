package main

import (
	"context"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"

	zbredpanda "github.com/zbstream/zbstream/contrib/redpanda"
)

// TestLintExample: the module's example configuration is valid for this
// command's environment (the zerobus output and the components it uses).
func TestLintExample(t *testing.T) {
	t.Setenv("ZEROBUS_TOKEN", "x")
	env := service.NewEnvironment()
	if err := zbredpanda.Register(env); err != nil {
		t.Fatal(err)
	}
	code, err := service.RunCLIToCode(context.Background(), service.CLIOptSetEnvironment(env),
		service.CLIOptSetArgs("zbredpanda", "lint", "../../config.example.yaml"))
	if err != nil || code != 0 {
		t.Fatalf("lint: exit %d, %v", code, err)
	}
}
