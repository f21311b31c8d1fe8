package flightfsm

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/zbstream/zbstream/core"
)

func TestParseAckAccepts(t *testing.T) {
	cases := []struct {
		in   string
		want Ack
	}{
		{`{"ack_up_to_offset":-1,"ack_up_to_records":0}`, Ack{Offset: -1}},
		{`{"ack_up_to_offset":3,"ack_up_to_records":250}`, Ack{Offset: 3, Rows: 250}},
		{` { "ack_up_to_records" : 7 , "ack_up_to_offset" : 0 } `, Ack{Offset: 0, Rows: 7}},
		{`{"ack_up_to_offset":-1,"ack_up_to_records":0,"close_stream_duration_ms":1500}`,
			Ack{Offset: -1, Close: 1500 * time.Millisecond, HasClose: true}},
		{`{"ack_up_to_offset":2,"ack_up_to_records":9,"close_stream_duration_ms":0}`,
			Ack{Offset: 2, Rows: 9, HasClose: true}},
		{`{"ack_up_to_offset":2,"ack_up_to_records":9,"close_stream_duration_ms":null}`, Ack{Offset: 2, Rows: 9}},
		{`{"ack_up_to_offset":1,"ack_up_to_records":2,"server":{"x":[1,"a"]},"v":null}`, Ack{Offset: 1, Rows: 2}},
		{`{"ack_up_to_offset":9223372036854775807,"ack_up_to_records":9223372036854775807}`,
			Ack{Offset: 1<<63 - 1, Rows: 1<<63 - 1}},
	}
	for _, c := range cases {
		got, err := ParseAck([]byte(c.in))
		if err != nil || got != c.want {
			t.Errorf("ParseAck(%s) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestParseAckRefuses(t *testing.T) {
	for _, in := range []string{
		``,
		` `,
		`null`,
		`[]`,
		`"x"`,
		`{}`,
		`{"ack_up_to_offset":1}`,
		`{"ack_up_to_records":1}`,
		`{"ack_up_to_offset":null,"ack_up_to_records":0}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":null}`,
		`{"ack_up_to_offset":"0","ack_up_to_records":0}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":1.0}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":1e2}`,
		`{"ack_up_to_offset":true,"ack_up_to_records":0}`,
		`{"ack_up_to_offset":-2,"ack_up_to_records":0}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":-1}`,
		`{"ack_up_to_offset":9223372036854775808,"ack_up_to_records":0}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0,"ack_up_to_offset":0}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0,"x":1,"x":2}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0,"close_stream_duration_ms":-5}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0,"close_stream_duration_ms":"5"}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0,"close_stream_duration_ms":9223372036854775807}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0,"close_stream_duration_ms":1,"close_stream_duration_ms":2}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0}x`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0}{}`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0} 1`,
		`{"ack_up_to_offset":0,"ack_up_to_records":0`,
		`{"ack_up_to_offset":0,,"ack_up_to_records":0}`,
	} {
		_, err := ParseAck([]byte(in))
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Rule != MalformedAck || !errors.Is(err, core.ErrProtocol) {
			t.Errorf("ParseAck(%q) = %v; want a MalformedAck *ProtocolError", in, err)
		}
	}
}

// FuzzParseAck: any bytes give an ack whose fields are in range, or a
// MalformedAck error; an accepted ack is valid JSON.
func FuzzParseAck(f *testing.F) {
	for _, s := range []string{
		`{"ack_up_to_offset":-1,"ack_up_to_records":0}`,
		`{"ack_up_to_offset":4,"ack_up_to_records":10,"close_stream_duration_ms":20}`,
		`{"ack_up_to_offset":4,"ack_up_to_records":10,"x":[{}]}`,
		`{"ack_up_to_offset":4}`, `{}`, `nul`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseAck(b)
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Rule != MalformedAck {
				t.Fatalf("error %v is not a MalformedAck", err)
			}
			return
		}
		if a.Offset < ReadyOffset || a.Rows < 0 || a.Close < 0 || (!a.HasClose && a.Close != 0) {
			t.Fatalf("accepted %q as %+v", b, a)
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
	})
}
