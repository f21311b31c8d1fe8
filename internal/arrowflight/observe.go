package arrowflight

import (
	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/grpcio"
)

// observer reports a stream's events to the application's
// zbstream.Observer: to its Observe method with the details when it is an
// EventObserver, to its counting methods otherwise. A batch is one call,
// its rows the call's records.
type observer struct {
	obs   zbstream.Observer
	ev    zbstream.EventObserver
	table string
}

func newObserver(obs zbstream.Observer, table string) observer {
	if obs == nil {
		obs = zbstream.NopObserver{}
	}
	ev, _ := obs.(zbstream.EventObserver)
	return observer{obs: obs, ev: ev, table: table}
}

func (o observer) event(e zbstream.Event) {
	e.Table = o.table
	o.ev.Observe(e)
}

func (o observer) accepted(off, rows, bytes int64) {
	if o.ev != nil {
		o.event(zbstream.Event{Kind: zbstream.EventAccepted, Offset: off, Records: int(rows), Bytes: bytes})
		return
	}
	o.obs.Accepted(int(rows), bytes)
}

func (o observer) durable(from, n int64) {
	if n == 0 {
		return
	}
	if o.ev != nil {
		for off := from; off < from+n; off++ {
			o.event(zbstream.Event{Kind: zbstream.EventDurable, Offset: off})
		}
		return
	}
	o.obs.Completed(n, false)
}

func (o observer) failed(from, n int64, err error) {
	if n == 0 {
		return
	}
	if o.ev != nil {
		for off := from; off < from+n; off++ {
			o.event(zbstream.Event{Kind: zbstream.EventFailed, Offset: off, Err: err, Code: grpcio.Classify(err)})
		}
		return
	}
	o.obs.Failed(n)
}

func (o observer) connected() {
	if o.ev != nil {
		o.event(zbstream.Event{Kind: zbstream.EventConnected})
		return
	}
	o.obs.Connected(false)
}

func (o observer) disconnected(code zbstream.Code) {
	if o.ev != nil {
		o.event(zbstream.Event{Kind: zbstream.EventDisconnected, Code: code})
		return
	}
	o.obs.Disconnected(code)
}

func (o observer) reconnecting(code zbstream.Code) {
	if o.ev != nil {
		o.event(zbstream.Event{Kind: zbstream.EventReconnecting, Code: code})
	}
}
