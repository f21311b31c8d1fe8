package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const sample = `package p

type T struct{ n, max int }

func (t *T) add(d int) {
	if d < 0 || t.ok() {
		return
	}
	t.n += d
	t.max = max(t.max, t.n)
	t.log("added")
	panic("never")
}

func (t *T) ok() bool { return !(t.n == 1) && true }

func (t *T) log(s string) { println("p: " + s) }
`

func TestFindMutants(t *testing.T) {
	ms, err := findMutants("/x/p.go", "p.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"p.go:T.add: boundary: d < 0 => d <= 0",
		"p.go:T.add: negate: d < 0 => d >= 0",
		"p.go:T.add: logical: d < 0 || t.ok() => d < 0 && t.ok()",
		"p.go:T.add: delete: return => (nothing)",
		"p.go:T.add: arith: t.n += d => t.n -= d",
		"p.go:T.add: delete: t.n += d => (nothing)",
		"p.go:T.add: minmax: max(t.max, t.n) => min(t.max, t.n)",
		"p.go:T.add: minmax: max(t.max, t.n) => t.max",
		"p.go:T.add: minmax: max(t.max, t.n) => t.n",
		"p.go:T.add: delete: t.max = max(t.max, t.n) => (nothing)",
		"p.go:T.add: delete: t.log(\"added\") => (nothing)",
		"p.go:T.ok: unary: !(t.n == 1) => (t.n == 1)",
		"p.go:T.ok: negate: t.n == 1 => t.n != 1",
		"p.go:T.ok: logical: !(t.n == 1) && true => !(t.n == 1) || true",
		"p.go:T.ok: bool: true => false",
		"p.go:T.log: delete: println(\"p: \" + s) => (nothing)",
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.ID)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing mutant %q", w)
		}
	}
	for _, g := range got {
		if strings.Contains(g, "panic") {
			t.Errorf("a panic is never removed: %q", g)
		}
		if strings.Contains(g, `"p: "`) && !strings.Contains(g, "delete") {
			t.Errorf("string concatenation mutated: %q", g)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d mutants, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, m := range ms {
		if m.ID == "p.go:T.add: arith: t.n += d => t.n -= d" {
			if out := string(m.apply([]byte(sample))); !strings.Contains(out, "\tt.n -= d\n") || strings.Contains(out, "t.n += d") {
				t.Errorf("apply:\n%s", out)
			}
		}
	}
}

func TestReadEquivalent(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "eq.txt")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := readEquivalent(write("# c\n\na: b => c\n\tthe reason,\n\tcontinued\nd: e => f\n  other\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a: b => c"] != "the reason, continued" || got["d: e => f"] != "other" {
		t.Errorf("got %q", got)
	}
	for _, bad := range []string{"a\nb\n\twhy\n", "a\n", "\twhy\n", "a\n\twhy\na\n\twhy\n"} {
		if _, err := readEquivalent(write(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if got, err := readEquivalent(filepath.Join(dir, "none")); err != nil || len(got) != 0 {
		t.Errorf("missing file: %v, %v", got, err)
	}
}
