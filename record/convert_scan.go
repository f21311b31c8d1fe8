package record

// The tokens of a JSON record for JSONToProto, read from a record that
// CheckJSON has already accepted: the grammar is known to hold, so the
// scanner only finds where each token ends. encoding/json's Decoder.Token
// did the same work with its own checks, at about 80 times the cost of
// CheckJSON (BenchmarkTableCheckerJSON).

import (
	"encoding/json"
	"io"
)

// scanner yields the tokens of valid JSON in the types json.Decoder.Token
// gives with UseNumber: json.Delim for the four brackets, string, a
// json.Number, bool, and nil for null. Commas and colons are skipped.
type scanner struct {
	b []byte
	i int
}

// skip moves past white space, and commas and colons (structure that the
// validation has already checked).
func (s *scanner) skip() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n', ',', ':':
			s.i++
		default:
			return
		}
	}
}

// more reports whether the array or object being read has another
// element, as json.Decoder.More does.
func (s *scanner) more() bool {
	s.skip()
	return s.i < len(s.b) && s.b[s.i] != ']' && s.b[s.i] != '}'
}

// token returns the next token. Running out of input cannot happen on a
// record CheckJSON accepted; it is reported, not assumed away.
func (s *scanner) token() (json.Token, error) {
	s.skip()
	if s.i >= len(s.b) {
		return nil, io.ErrUnexpectedEOF
	}
	switch c := s.b[s.i]; c {
	case '{', '}', '[', ']':
		s.i++
		return json.Delim(c), nil
	case '"':
		return s.str()
	case 't':
		s.i += len("true")
		return true, nil
	case 'f':
		s.i += len("false")
		return false, nil
	case 'n':
		s.i += len("null")
		return nil, nil
	default:
		start := s.i
		for s.i < len(s.b) && isNumberByte(s.b[s.i]) {
			s.i++
		}
		return json.Number(s.b[start:s.i]), nil
	}
}

// str reads a string. One without escapes is its bytes; one with escapes
// is decoded by encoding/json, so that it reads exactly as before (an
// unpaired surrogate escape becomes U+FFFD, say).
func (s *scanner) str() (json.Token, error) {
	start := s.i
	escaped := false
	for s.i++; s.i < len(s.b); s.i++ {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i++ // the escaped byte cannot end the string
		case '"':
			s.i++
			if !escaped {
				return string(s.b[start+1 : s.i-1]), nil
			}
			var v string
			if err := json.Unmarshal(s.b[start:s.i], &v); err != nil {
				return nil, err
			}
			return v, nil
		}
	}
	return nil, io.ErrUnexpectedEOF
}

// isNumberByte reports whether c can be part of a JSON number.
func isNumberByte(c byte) bool {
	return isDigit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
