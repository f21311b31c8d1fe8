package cli

import (
	"sync"
	"time"
)

// Every calls f every interval on a goroutine of its own until the
// returned function is called (once or more); that function returns once
// the goroutine has ended.
func Every(interval time.Duration, f func()) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				f()
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}
