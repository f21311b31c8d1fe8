package core

import "errors"

// errNilFailure is returned by Fail when it is given no cause.
var errNilFailure = errors.New("zbstream: Fail needs a non-nil cause")

// Fail ends the stream at once with a cause the driver found outside the
// protocol: an application callback that panicked, an open abandoned because
// its context was cancelled, a transport that broke its contract. It behaves
// like any terminal failure: the connection is aborted, every accepted record
// that is not durable fails once with err, in offset order, stays
// retrievable with Unacked, and ActFinished carries err. Fail on a stream that
// has already closed or failed changes nothing and returns nil; a nil err is
// misuse.
func (m *Machine) Fail(now Instant, err error) error {
	if err := m.checkTime(now); err != nil {
		return err
	}
	if err == nil {
		return errNilFailure
	}
	if m.State().Terminal() {
		return nil
	}
	m.now = now
	m.fail(err)
	return nil
}
