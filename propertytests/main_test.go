package propertytests

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// TestMain sets rapid's check count from ZBSTREAM_RAPID_CHECKS (default
// 200). An explicit -rapid.checks on the command line still wins.
func TestMain(m *testing.M) {
	checks := 200
	if v := os.Getenv("ZBSTREAM_RAPID_CHECKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "ZBSTREAM_RAPID_CHECKS=%q: want a positive integer\n", v)
			os.Exit(2)
		}
		checks = n
	}
	if err := flag.Set("rapid.checks", strconv.Itoa(checks)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
