package server

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/status"
)

// What a client sent is repeated in status messages and log lines (a table
// name, a header, a stream id) so that the client can see what was wrong
// with it, but never whole: a client could send megabytes (a 2 MiB header
// once made an 8 MiB status message and a 10 MiB log line). These bounds
// are documented in docs/server.md.
const (
	// maxEcho is the most of one client-supplied string repeated.
	maxEcho = 128
	// maxStatusMessage bounds a whole status message the server sends or
	// logs, whatever it is made of.
	maxStatusMessage = 1024
)

// clip returns s, or its first maxEcho bytes (cut on a rune boundary)
// followed by how long it was; with %q the result stays one short line.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", cutRunes(s, maxEcho), len(s))
}

// cutRunes returns at most n bytes of s, not splitting a UTF-8 sequence
// (invalid bytes count as one rune each).
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(s[n]); i++ {
		n--
	}
	return s[:n]
}

// capStatus bounds the message of a status error to maxStatusMessage
// bytes (the last guard, after each echo was clipped where it is made).
func capStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok || len(st.Message()) <= maxStatusMessage {
		return err
	}
	msg := st.Message()
	return status.Error(st.Code(), fmt.Sprintf("%s... (message of %d bytes cut)", cutRunes(msg, maxStatusMessage), len(msg)))
}
