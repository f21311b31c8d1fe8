// Package version holds the module's version, in one place: the root
// package re-exports it (zbstream.Version) and grpcio sends it in the
// user agent and the x-zerobus-sdk header, which the root cannot give it
// (the root imports grpcio).
package version

// Version is the version of the zbstream module.
const Version = "0.1.0"
