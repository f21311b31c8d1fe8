// Package redpandatest holds the tests of the Redpanda Connect output
// (contrib/redpanda) that run it against the reference server
// (server/servertest): faults, OAuth, proto records, the per-call limit.
//
// They are a module of their own so that the adapter's module does not
// require the server and its storage (go.etcd.io/bbolt) even for its
// tests: a program that uses the adapter resolves none of it. The adapter
// checks records with package record, which the server shares.
package redpandatest
