package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The environment that makes this binary run as a child in a role (the
// demo's server and client, bench's RSS client): RoleEnv holds
// "COMMAND:ROLE", RoleConfigEnv the role's configuration as JSON.
const (
	RoleEnv       = "ZBSTREAM_ROLE"
	RoleConfigEnv = "ZBSTREAM_ROLE_CONFIG"
)

// RoleCommand returns a command that runs this binary's subcommand command
// again as a child in role, with cfg (marshalled to JSON) as its
// configuration. The child finds them with Role.
func RoleCommand(ctx context.Context, command, role string, cfg any) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("the %s %s's configuration: %w", command, role, err)
	}
	cmd := exec.CommandContext(ctx, exe, command)
	cmd.Env = append(os.Environ(), RoleEnv+"="+command+":"+role, RoleConfigEnv+"="+string(js))
	return cmd, nil
}

// Role returns the role this process was started in for command by
// RoleCommand ("" if none), with its configuration decoded into cfg.
func Role(command string, cfg any) (string, error) {
	v, ok := strings.CutPrefix(os.Getenv(RoleEnv), command+":")
	if !ok || v == "" {
		return "", nil
	}
	if err := json.Unmarshal([]byte(os.Getenv(RoleConfigEnv)), cfg); err != nil {
		return "", fmt.Errorf("%s %s: bad %s: %w", command, v, RoleConfigEnv, err)
	}
	return v, nil
}
