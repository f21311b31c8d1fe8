package fsm_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/fsm"
)

var update = flag.Bool("update", false, "rewrite the lifecycle diagram in README.md")

const (
	beginMarker = "<!-- BEGIN fsm diagram -->\n"
	endMarker   = "<!-- END fsm diagram -->"
)

// TestREADMEDiagram keeps the README's lifecycle diagram equal to the one
// generated from the live machine.
func TestREADMEDiagram(t *testing.T) {
	const path = "../README.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin := strings.Index(readme, beginMarker)
	end := strings.Index(readme, endMarker)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the %q ... %q markers", beginMarker, endMarker)
	}
	want := "```mermaid\n" + fsm.Mermaid() + "```\n"
	got := readme[begin+len(beginMarker) : end]
	if got == want {
		return
	}
	if *update {
		readme = readme[:begin+len(beginMarker)] + want + readme[end:]
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md lifecycle diagram is stale; run go test ./fsm -run TestREADMEDiagram -update\ngot:\n%s\nwant:\n%s", got, want)
}
