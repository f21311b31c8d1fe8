// Package cli holds what every zbstream subcommand shares: exit codes and
// the error that carries one, flag sets and their one parser (flags may
// follow positional arguments), the byte-size flag value, the hints that
// turn a client error into the flag that fixes it, and the one way to run
// this binary again as a child in a role.
package cli
