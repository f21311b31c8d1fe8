package zerobus

// RecordAck is the handle IngestRecord returns: the record's offset, and a
// way to wait for its acknowledgement.
//
// Deprecated: use IngestRecordOffset and WaitForOffset.
type RecordAck struct {
	st     *ZerobusStream
	offset int64
}

// Await blocks until the record is acknowledged, as WaitForOffset does, and
// returns its offset; on failure -1 and the error.
//
// Deprecated: use WaitForOffset.
func (a *RecordAck) Await() (int64, error) {
	if err := a.st.WaitForOffset(a.offset); err != nil {
		return -1, err
	}
	return a.offset, nil
}

// Offset returns the record's offset at once, without waiting, and a nil
// error.
func (a *RecordAck) Offset() (int64, error) { return a.offset, nil }
