package admin

import (
	"errors"
	"fmt"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/zbstream/zbstream/server"
)

// boltLockTimeout is how long OpenBolt waits for another process's lock
// on the database before it says who holds it.
const boltLockTimeout = time.Second

// OpenBolt opens the durable store in dir (for serve, and for streams
// -data), failing fast with a clear message when another process holds it.
func OpenBolt(dir string) (*server.BoltStore, error) {
	st, err := server.OpenBoltStore(dir, server.WithBoltLockTimeout(boltLockTimeout))
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("data directory %s is in use by another process (a running zbstream serve?): its database is locked", dir)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}
