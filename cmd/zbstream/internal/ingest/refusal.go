package ingest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/cmd/zbstream/internal/cli"
	"github.com/zbstream/zbstream/core"
)

// pin is the part of the input the server holds, saved in the state
// file when the server refused a call for good: the first Calls calls
// (offsets 0..Calls-1), Records records ending with record or line Last,
// at byte Bytes of the file, whose bytes hash to SHA256.
//
// Without it, a refused call would leave the stream stuck: the same call
// is refused on every rerun, and the corrected file is refused as another
// file. With it, a rerun accepts a file whose first Bytes bytes are the
// same (the records the server holds cannot have changed) and makes the
// calls after the pin afresh from the new content. A cut at Records (in
// the state's Cuts) ends a call there whatever comes next, so the calls
// the server holds keep their offsets.
type pin struct {
	Calls   int64  `json:"calls"`
	Records int64  `json:"records"`
	Last    int64  `json:"last"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// refused reports whether err is the server refusing the stream for
// good (no reconnect can help): not a retryable connection failure, not a
// retry budget spent.
func refused(err error) (*zbstream.ConnectionError, bool) {
	var ce *zbstream.ConnectionError
	if !errors.As(err, &ce) || ce.Retryable() {
		return nil, false
	}
	var re *zbstream.RetryError
	if errors.As(err, &re) {
		return nil, false
	}
	return ce, true
}

// refused turns the server's refusal of a call into a message that names
// the records of the call, pins the part of the file the server holds (so
// that a corrected file can go on, see pin) and says what to do.
// durable is the last call the server holds.
func (r *run) refused(err error, ce *zbstream.ConnectionError, durable int64) error {
	held, call := r.tr.around(durable)
	st := r.st
	what := fmt.Sprintf("the server refused call %d of %d for good", durable+1, st.Batches)
	if call != nil {
		what += " (" + r.src.describe(call.first.n, call.last.n) + ")"
	}
	after := "from its start"
	if held.offset >= 0 {
		after = "after " + r.src.records(held.last.n, held.last.n)
	}
	pin := &pin{Calls: held.offset + 1, Records: held.records, Last: held.last.n, Bytes: held.last.end}
	sum, herr := r.src.prefixSHA256(pin.Bytes)
	if herr == nil {
		pin.SHA256 = sum
		st.Pin = pin
		if pin.Records > 0 && !slices.Contains(st.Cuts, pin.Records) {
			st.Cuts = append(st.Cuts, pin.Records)
			slices.Sort(st.Cuts)
		}
		herr = st.save(r.f.state)
	}
	var todo string
	switch {
	case herr != nil:
		todo = fmt.Sprintf("the state file could not record where to go on (%v): restore %s as it was before running again", herr, r.src.path)
	case ce.Code != core.CodeInvalidArgument:
		todo = fmt.Sprintf("once the cause is fixed, run the same command again: it keeps the %s stream %s holds and goes on %s",
			plural(held.records, "record"), st.StreamID, after)
	case held.offset < 0:
		todo = fmt.Sprintf("correct or remove the refused records and run the same command again: stream %s holds nothing yet", st.StreamID)
	default:
		todo = fmt.Sprintf("correct or remove the refused records, leaving everything up to %s as it is, and run the same command again: it keeps the %s stream %s holds and goes on %s",
			r.src.describe(held.last.n, held.last.n), plural(held.records, "record"), st.StreamID, after)
	}
	err = core.Errorf("%s: %w; %s", what, err, todo)
	if ce.Code == core.CodeInvalidArgument {
		return cli.WithCode(cli.ExitInput, err) // the input, not the setup, is refused
	}
	return r.f.clientErr(err)
}
