package fsm_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/zbstream/zbstream/fsm"
)

var update = flag.Bool("update", false, "rewrite the lifecycle diagram in docs/architecture.md")

const (
	beginMarker = "<!-- BEGIN fsm diagram -->\n"
	endMarker   = "<!-- END fsm diagram -->"
)

// TestLifecycleDiagram keeps docs/architecture.md's lifecycle diagram equal to the one
// generated from the live machine.
func TestLifecycleDiagram(t *testing.T) {
	const path = "../docs/architecture.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	begin := strings.Index(readme, beginMarker)
	end := strings.Index(readme, endMarker)
	if begin < 0 || end < begin {
		t.Fatalf("docs/architecture.md lacks the %q ... %q markers", beginMarker, endMarker)
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
	t.Errorf("docs/architecture.md lifecycle diagram is stale; run go test ./fsm -run TestLifecycleDiagram -update\ngot:\n%s\nwant:\n%s", got, want)
}
