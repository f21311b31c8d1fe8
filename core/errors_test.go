package core_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/core"
)

// TestErrorPrefixOnce: the wrapping errors of the core show the errors they
// wrap without their prefix, so that a chain says "zbstream: " once, at
// its start, and errors.Is, errors.As and errors.Unwrap see what
// fmt.Errorf would have given them.
func TestErrorPrefixOnce(t *testing.T) {
	conn := &core.ConnectionError{Code: core.CodeUnavailable, Err: core.Errorf("credentials: %w", &core.ConfigError{Field: "F", Reason: "is bad"})}
	retry := &core.RetryError{Attempts: 4, Last: conn}
	failed := core.Errorf("%w: %w", core.ErrStreamFailed, retry)
	opening := core.Errorf("opening the stream: %w", failed)
	want := "zbstream: opening the stream: stream failed: recovery retries exhausted after 4 attempts: " +
		"connection failed (UNAVAILABLE): credentials: invalid config: F is bad"
	if got := opening.Error(); got != want {
		t.Errorf("message\n got %s\nwant %s", got, want)
	}
	var cfg *core.ConfigError
	var ce *core.ConnectionError
	if !errors.Is(opening, core.ErrStreamFailed) || !errors.Is(opening, core.ErrRetriesExhausted) ||
		!errors.Is(opening, core.ErrInvalidConfig) || !errors.As(opening, &cfg) || !errors.As(opening, &ce) {
		t.Errorf("errors.Is/As lost the chain of %v", opening)
	}
	if errors.Unwrap(opening) != failed {
		t.Errorf("errors.Unwrap(%v) is not the wrapped error", opening)
	}
	if u, ok := failed.(interface{ Unwrap() []error }); !ok || len(u.Unwrap()) != 2 {
		t.Errorf("two %%w: Unwrap() []error, as with fmt.Errorf")
	}
	// Without %w nothing is wrapped; non-error arguments are formatted
	// as usual.
	plain := core.Errorf("record %d: %v", 3, core.ErrClosed)
	if plain.Error() != "zbstream: record 3: stream closed" || errors.Unwrap(plain) != nil || errors.Is(plain, core.ErrClosed) {
		t.Errorf("%%v: %q, unwrap %v", plain, errors.Unwrap(plain))
	}
	// Errors of others keep their text.
	if got := core.Errorf("reading: %w", io.EOF).Error(); got != "zbstream: reading: EOF" {
		t.Errorf("got %q", got)
	}
	if got := core.Unprefixed(fmt.Errorf("zbstream: a: %w", io.EOF)); got != "a: EOF" {
		t.Errorf("Unprefixed: %q", got)
	}
	if n := strings.Count(retry.Error(), core.Prefix); n != 1 {
		t.Errorf("%q says %q %d times", retry, core.Prefix, n)
	}
}

// retryable is a cause that says whether a reconnect can fix it.
type retryable bool

func (r retryable) Error() string   { return "cause" }
func (r retryable) Retryable() bool { return bool(r) }

// TestConnectionErrorRetryableCause: a cause with a Retryable method of its
// own, however deep, overrides a retryable code, never a non-retryable one.
func TestConnectionErrorRetryableCause(t *testing.T) {
	for _, c := range []struct {
		code core.Code
		err  error
		want bool
	}{
		{core.CodeUnavailable, nil, true},
		{core.CodeUnavailable, io.EOF, true},
		{core.CodeUnavailable, fmt.Errorf("wrapped: %w", retryable(false)), false},
		{core.CodeUnavailable, retryable(true), true},
		{core.CodeUnauthenticated, retryable(true), false},
	} {
		if got := (&core.ConnectionError{Code: c.code, Err: c.err}).Retryable(); got != c.want {
			t.Errorf("%v with cause %v: Retryable %v, want %v", c.code, c.err, got, c.want)
		}
	}
}
