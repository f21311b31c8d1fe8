package cli

import (
	"flag"
	"io"
	"math"
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"512", 512},
		{"512B", 512},
		{"512b", 512},
		{" 512 B ", 512},
		{"1KB", 1000},
		{"1KiB", 1024},
		{"1kib", 1024},
		{"10 MiB", 10 << 20},
		{"1MB", 1_000_000},
		{"1.5MB", 1_500_000},
		{"1.5KiB", 1536},
		{"1.5mib", 3 << 19},
		{"1GB", 1_000_000_000},
		{"1GiB", 1 << 30},
		{"1gb", 1_000_000_000},
		{"4GiB", 4 << 30},
		{"2TB", 2e12},
		{"2TiB", 2 << 40},
		{"0.5KB", 500},
		{"007", 7},
		{"9223372036854775807", math.MaxInt64},
	} {
		got, err := ParseByteSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseByteSizeErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{"", "empty"},
		{"   ", "empty"},
		{"-1", "negative"},
		{"-1KiB", "negative"},
		{"+1", "want a number of bytes"},
		{"1.5.5MB", "want a number of bytes"},
		{".5MB", "want a number of bytes"},
		{"1.MB", "want a number of bytes"},
		{"MB", "want a number of bytes"},
		{"lots", "want a number of bytes"},
		{"10XB", `unknown unit "XB"`},
		{"1e3", `unknown unit "e3"`},
		{"10Bi", `unknown unit "Bi"`},
		{"8EiB", `unknown unit "EiB"`},
		{"10K", `ambiguous unit "K": write KB (1000) or KiB (1024)`},
		{"10m", `ambiguous unit "m": write MB (1000000) or MiB (1048576)`},
		{"1G", "ambiguous"},
		{"99999999999GiB", "too large"},
		{"9223372036854775808", "too large"},
		{"1.0000001KB", "not a whole number of bytes"},
		{"0.3B", "not a whole number of bytes"},
		{"0.1", "not a whole number of bytes"},
	} {
		got, err := ParseByteSize(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ParseByteSize(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.msg)
		}
	}
}

func TestFormatByteSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 1: "1", 512: "512", 1000: "1KB", 1024: "1KiB", 1536: "1536",
		1_500_000: "1500KB", 10 << 20: "10MiB", 256 << 20: "256MiB", 1 << 30: "1GiB",
		1_000_000_000: "1GB", 4 << 30: "4GiB", 1024 << 30: "1TiB", 1_024_000: "1000KiB",
	} {
		if got := FormatByteSize(n); got != want {
			t.Errorf("FormatByteSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseByteSize(want); err != nil || back != n {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", want, back, err, n)
		}
	}
}

// TestByteSizeVar: the flag's default, what it parses into *p, its help
// line and a refused value.
func TestByteSizeVar(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var n int64
	ByteSizeVar(fs, &n, "max", 10<<20, "at most `bytes` (e.g. 10MiB; "+SizeUnits+")")
	if n != 10<<20 || fs.Lookup("max").DefValue != "10MiB" {
		t.Fatalf("default %d, shown as %q; want 10MiB", n, fs.Lookup("max").DefValue)
	}
	if err := fs.Parse([]string{"-max", "1.5MB"}); err != nil || n != 1_500_000 {
		t.Fatalf("-max 1.5MB: %d, %v", n, err)
	}
	if got := fs.Lookup("max").Value.(flag.Getter).Get(); got != int64(1_500_000) {
		t.Errorf("Get() = %v (%T), want int64 1500000", got, got)
	}
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	if want := "at most bytes (e.g. 10MiB; KB=1000, KiB=1024) (default 10MiB)"; !strings.Contains(help.String(), want) {
		t.Errorf("help %q lacks %q", help.String(), want)
	}
	err := fs.Parse([]string{"-max", "10M"})
	if err == nil || !strings.Contains(err.Error(), `invalid value "10M" for flag -max: ambiguous unit "M"`) {
		t.Errorf("-max 10M: %v", err)
	}
	if s := (*ByteSize)(nil).String(); s != "0" {
		t.Errorf("nil String() = %q, want 0", s)
	}
}
