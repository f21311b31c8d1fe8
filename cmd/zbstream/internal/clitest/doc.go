// Package clitest is what the zbstream command's tests share: running a
// subcommand in-process as main does, serve started in-process on free
// ports, the command built once as a binary for the tests that need
// processes of their own, and the goroutine check every test binary ends
// with. It is imported by tests only.
package clitest
