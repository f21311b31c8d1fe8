package record

import (
	"encoding/binary"
	"errors"
	"unicode/utf8"
)

// JSON record validation in one pass (issue 7: encoding/json.Valid was half
// of the server's CPU). CheckJSON accepts exactly what
// encoding/json.Valid accepts, restricted to a top-level object in valid
// UTF-8 (encoding/json.Valid alone lets invalid UTF-8 through inside
// strings); FuzzCheckJSON checks it differentially against that
// definition.

// The reasons CheckJSON (and Checker.Check, on a JSON stream) refuses a
// record, for errors.Is; CheckJSON names the first rule broken in this
// order.
var (
	// ErrNotObject: the record is not a JSON object (after leading
	// white space, its first byte is not '{'), or it is empty.
	ErrNotObject = errors.New("not a JSON object")
	// ErrInvalidUTF8: the record is an object but not valid UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrInvalidJSON: the record starts as an object in valid UTF-8 but
	// is not valid JSON (as encoding/json.Valid defines it).
	ErrInvalidJSON = errors.New("invalid JSON")
)

// maxJSONDepth is encoding/json's nesting limit: deeper input is invalid.
const maxJSONDepth = 10000

// CheckJSON accepts exactly one JSON object, in valid UTF-8, which may be
// surrounded by JSON white space: the records of a JSON stream. Otherwise
// it returns ErrNotObject, ErrInvalidUTF8 or ErrInvalidJSON, the first of
// them that applies. It makes one pass over rec and does not allocate.
func CheckJSON(rec []byte) error {
	i := skipSpace(rec, 0)
	if i == len(rec) || rec[i] != '{' {
		return ErrNotObject
	}
	if validJSON(rec, i) {
		return nil
	}
	// The slow path only on failure, to name the first rule broken as
	// the two-pass check did: UTF-8 first.
	if !utf8.Valid(rec) {
		return ErrInvalidUTF8
	}
	return ErrInvalidJSON
}

// jsonSpace and strPlain classify bytes: JSON whitespace, and bytes that
// stand for themselves inside a string (printable ASCII but '"' and '\').
var jsonSpace, strPlain [256]bool

func init() {
	for _, c := range []byte(" \t\r\n") {
		jsonSpace[c] = true
	}
	for c := 0x20; c < 0x80; c++ {
		strPlain[c] = c != '"' && c != '\\'
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && jsonSpace[b[i]] {
		i++
	}
	return i
}

// parser states of validJSON.
const (
	wantValue  = iota // a value
	wantKey           // an object key (a string), then ':' and a value
	afterValue        // ',' or the end of the enclosing container (or input)
)

// validJSON reports whether b, from i on, is one JSON value followed by
// whitespace only, with every string in valid UTF-8 (b[:i] is whitespace).
func validJSON(b []byte, i int) bool {
	var stackBuf [64]byte
	stack := stackBuf[:0] // open containers: '{' or '['
	n := len(b)
	state := wantValue
	for {
		i = skipSpace(b, i)
		switch state {
		case wantKey:
			if i == n || b[i] != '"' {
				return false
			}
			var ok bool
			if i, ok = scanString(b, i+1); !ok {
				return false
			}
			i = skipSpace(b, i)
			if i == n || b[i] != ':' {
				return false
			}
			i++
			state = wantValue
		case wantValue:
			if i == n {
				return false
			}
			switch c := b[i]; c {
			case '{', '[':
				if len(stack) == maxJSONDepth {
					return false
				}
				stack = append(stack, c)
				i = skipSpace(b, i+1)
				switch {
				case i < n && c == '{' && b[i] == '}', i < n && c == '[' && b[i] == ']':
					stack = stack[:len(stack)-1]
					i++
					state = afterValue
				case c == '{':
					state = wantKey
				}
				continue
			case '"':
				var ok bool
				if i, ok = scanString(b, i+1); !ok {
					return false
				}
			case 't':
				if !hasLiteral(b, i, "true") {
					return false
				}
				i += 4
			case 'f':
				if !hasLiteral(b, i, "false") {
					return false
				}
				i += 5
			case 'n':
				if !hasLiteral(b, i, "null") {
					return false
				}
				i += 4
			default:
				var ok bool
				if i, ok = scanNumber(b, i); !ok {
					return false
				}
			}
			state = afterValue
		default: // afterValue
			if len(stack) == 0 {
				return i == n
			}
			if i == n {
				return false
			}
			top := stack[len(stack)-1]
			switch c := b[i]; {
			case c == ',':
				i++
				if top == '{' {
					state = wantKey
				} else {
					state = wantValue
				}
			case top == '{' && c == '}', top == '[' && c == ']':
				stack = stack[:len(stack)-1]
				i++
			default:
				return false
			}
		}
	}
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// scanString scans a string whose opening quote is before b[i] and returns
// the index after its closing quote.
func scanString(b []byte, i int) (int, bool) {
	n := len(b)
	for i < n {
		i = skipPlain8(b, i)
		for i < n && strPlain[b[i]] {
			i++
		}
		if i == n {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 == n {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if n-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default: // c >= 0x80
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
	return i, false
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// skipPlain8 skips string bytes eight at a time while none of the eight
// is special (below 0x20, a quote, a backslash or non-ASCII): a byte v
// of x has (v-k)&^v&0x80 set when v < k (k <= 0x80), and a borrow from a
// lower byte can only add false alarms. It may stop early (a
// false alarm is harmless: the caller goes on byte by byte), never late.
func skipPlain8(b []byte, i int) int {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs|x)&highs != 0 {
			return i
		}
		i += 8
	}
	return i
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? from
// b[i] and returns the index after it.
func scanNumber(b []byte, i int) (int, bool) {
	n := len(b)
	if i < n && b[i] == '-' {
		i++
	}
	switch {
	case i < n && b[i] == '0':
		i++
	case i < n && '1' <= b[i] && b[i] <= '9':
		for i++; i < n && isDigit(b[i]); i++ {
		}
	default:
		return i, false
	}
	if i < n && b[i] == '.' {
		i++
		if i == n || !isDigit(b[i]) {
			return i, false
		}
		for i < n && isDigit(b[i]) {
			i++
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == n || !isDigit(b[i]) {
			return i, false
		}
		for i < n && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}
