//go:build !linux

package server

import bolt "go.etcd.io/bbolt"

// dropMapped is a no-op outside Linux (see store_bolt_rss_linux.go).
func dropMapped(*bolt.DB) {}
