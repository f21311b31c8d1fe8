package core

import "testing"

// TestCheckAckContract pins checkAck's result: a violation comes with
// advance == false (onAck relies on it), a duplicate is (false, nil), and
// only an ack above the floor advances.
func TestCheckAckContract(t *testing.T) {
	b := ackBounds{floor: 4, maxSent: 9}
	tests := []struct {
		name    string
		r       Response
		advance bool
		bad     bool
	}{
		{"missing", Response{Kind: RespAck}, false, true},
		{"below floor", Response{Kind: RespAck, Offset: 3, HasOffset: true}, false, true},
		{"above sent", Response{Kind: RespAck, Offset: 10, HasOffset: true}, false, true},
		{"duplicate", Response{Kind: RespAck, Offset: 4, HasOffset: true}, false, false},
		{"advances", Response{Kind: RespAck, Offset: 5, HasOffset: true}, true, false},
		{"advances to maxSent", Response{Kind: RespAck, Offset: 9, HasOffset: true}, true, false},
	}
	for _, tc := range tests {
		advance, err := checkAck(b, tc.r)
		if advance != tc.advance || (err != nil) != tc.bad {
			t.Errorf("%s: checkAck = %v, %v; want %v, error %v", tc.name, advance, err, tc.advance, tc.bad)
		}
	}
}
