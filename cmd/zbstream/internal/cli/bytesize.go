// Package cli holds what the zbstream command's subcommands share.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"strings"
)

// SizeUnits is the rule of byte sizes, for the help text of each size flag:
// KB, MB, GB and TB are powers of 1000, KiB, MiB, GiB and TiB powers of 1024.
const SizeUnits = "KB=1000, KiB=1024"

// ByteSize is a number of bytes given on the command line. As a flag.Value
// it parses what ParseByteSize does and prints what FormatByteSize does; its
// Get returns the int64.
type ByteSize int64

// ByteSizeVar defines a byte-size flag name on fs with the default value
// and usage; *p holds its value. Usage should end with an example and
// SizeUnits, e.g. "(e.g. 10MiB; " + SizeUnits + ")".
func ByteSizeVar(fs *flag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Var((*ByteSize)(p), name, usage)
}

// Set parses s with ParseByteSize.
func (b *ByteSize) Set(s string) error {
	n, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// String formats the size with FormatByteSize; a nil *ByteSize is "0".
func (b *ByteSize) String() string {
	if b == nil {
		return "0"
	}
	return FormatByteSize(int64(*b))
}

// Get returns the size as an int64 (flag.Getter).
func (b *ByteSize) Get() any { return int64(*b) }

// byteUnits are the units ParseByteSize takes, by lower-case spelling.
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// formatUnits are the units FormatByteSize writes, in the order it tries
// them: the binary ones first, then the decimal ones, each largest first.
var formatUnits = []struct {
	name string
	mult int64
}{
	{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
}

var errSyntax = errors.New("want a number of bytes such as 512, 64KiB or 1.5MB (" + SizeUnits + ")")

// ParseByteSize parses a number of bytes: a whole or decimal number, then
// optionally a unit, case-insensitive and perhaps after spaces: B (bytes,
// the same as none), KB, MB, GB and TB (powers of 1000), KiB, MiB, GiB and
// TiB (powers of 1024). A fraction must come to a whole number of bytes
// ("1.5MB" is 1500000, "1.5KiB" 1536, "0.3B" an error). It refuses
// negative numbers, exponents, the ambiguous K, M, G and T, and sizes over
// math.MaxInt64. Its errors do not repeat s.
func ParseByteSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if end >= 0 {
		num, unit = s[:end], strings.TrimSpace(s[end:])
	}
	switch {
	case s == "":
		return 0, fmt.Errorf("empty: %w", errSyntax)
	case s[0] == '-':
		return 0, fmt.Errorf("negative: %w", errSyntax)
	case !isDecimal(num):
		return 0, errSyntax
	}
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		if u := strings.ToUpper(unit); len(u) == 1 && strings.Contains("KMGT", u) {
			return 0, fmt.Errorf("ambiguous unit %q: write %sB (%d) or %siB (%d)", unit, u, byteUnits[strings.ToLower(u)+"b"], u, byteUnits[strings.ToLower(u)+"ib"])
		}
		return 0, fmt.Errorf("unknown unit %q: want B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)", unit)
	}
	r, _ := new(big.Rat).SetString(num) // isDecimal: it parses
	r.Mul(r, new(big.Rat).SetInt64(mult))
	switch {
	case !r.IsInt():
		return 0, errors.New("not a whole number of bytes")
	case !r.Num().IsInt64():
		return 0, fmt.Errorf("too large: over %d bytes", int64(math.MaxInt64))
	}
	return r.Num().Int64(), nil
}

// isDecimal reports whether s, made of digits and dots, is a number with
// perhaps a fraction: "12", "1.5", but not "", ".5", "1." or "1.2.3".
func isDecimal(s string) bool {
	whole, frac, dot := strings.Cut(s, ".")
	return whole != "" && (!dot || frac != "" && !strings.Contains(frac, "."))
}

// FormatByteSize writes n in the largest binary unit it is a whole number
// of ("10MiB"), else in the largest decimal one ("1500KB"), else in bytes
// with no unit ("1536"). ParseByteSize reads what it writes.
func FormatByteSize(n int64) string {
	for _, u := range formatUnits {
		if n != 0 && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.name)
		}
	}
	return fmt.Sprint(n)
}

var _ flag.Getter = (*ByteSize)(nil)
