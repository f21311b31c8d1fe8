package zbstream_test

// docs/protocol.md is the specification that comments, tests and the README
// cite by section number. TestProtocolDocCitations keeps every such citation
// pointing at a section that exists.
//
// What counts as a citation (the pattern the repository uses):
//
//   - A section sign followed by a number, "§5" or "§5.5" (any depth), in a
//     .go or .md file. This repository has one numbered specification, so a
//     bare "§N" cites docs/protocol.md, whether "protocol.md" precedes it
//     ("protocol.md §5.5", "protocol.md §4, §5.3", "§4/§5.9") or not. The
//     exception is a section sign written directly after the name of another
//     document on the same line: "issue 7, §2", "RFC 6749 §5.2",
//     "architecture.md §3". Those cite something else and are skipped.
//   - "protocol.md section N" spelled out.
//   - A citation directly followed by a quoted title, `§4, "Call start"` or
//     `§5 ("Client obligations")`, must also match a heading: the cited
//     section's own, or that of one of its subsections. The title may wrap
//     onto a following // comment line.
//
// Sections are the numbered headings of docs/protocol.md: "## 5. Client
// obligations" is section 5, "### 5.5 Recovery" is section 5.5. Headings
// inside fenced code blocks do not count.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const protocolDocPath = "docs/protocol.md"

var (
	// protocolHeadingRE matches a numbered heading: level 2 or deeper, the
	// number, an optional dot, the title.
	protocolHeadingRE = regexp.MustCompile(`^#{2,6}[ \t]+(\d+(?:\.\d+)*)\.?[ \t]+(\S.*?)[ \t]*$`)
	// protocolSignRE matches "§N(.M)*", optionally followed by a quoted
	// title, written `, "T"` or ` ("T")`; the title may continue on the
	// next // comment line.
	protocolSignRE = regexp.MustCompile(`§(\d+(?:\.\d+)*)(?:(?:,[ \t]+|[ \t]+\()"((?:[^"\n]|\n[ \t]*//){1,80})")?`)
	// protocolWordRE matches "protocol.md section N", possibly across a
	// comment line break.
	protocolWordRE = regexp.MustCompile(`protocol\.md[ \t]*(?:\n[ \t]*//)?[ \t]*sections?[ \t]+(\d+(?:\.\d+)*)`)
	// otherDocRE matches the end of a line prefix that names a document
	// other than the protocol: the section sign after it is not ours.
	otherDocRE = regexp.MustCompile(`(?i)(?:\bissue[ \t]+#?\d+|\brfc[ \t]*\d+|([\w./-]+\.md))[ \t]*[,:]?[ \t]*$`)
	// commentBreakRE is a line break into a // comment, inside a title.
	commentBreakRE = regexp.MustCompile(`\s*\n[ \t]*//\s*`)
)

// protocolSection is one numbered heading of docs/protocol.md.
type protocolSection struct {
	number string
	title  string
	line   int
}

// parseProtocolSections returns the numbered headings of doc, by number, and
// the structural problems it finds: a number used twice, a subsection whose
// parent section does not exist.
func parseProtocolSections(doc string) (map[string]protocolSection, []string) {
	secs := map[string]protocolSection{}
	var problems []string
	fenced := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := protocolHeadingRE.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		s := protocolSection{number: m[1], title: m[2], line: i + 1}
		if prev, dup := secs[s.number]; dup {
			problems = append(problems, fmt.Sprintf("line %d: section %s is also the heading at line %d", s.line, s.number, prev.line))
			continue
		}
		if parent, _, nested := cutLast(s.number, "."); nested {
			if _, ok := secs[parent]; !ok {
				problems = append(problems, fmt.Sprintf("line %d: section %s comes before, or without, its parent section %s", s.line, s.number, parent))
			}
		}
		secs[s.number] = s
	}
	return secs, problems
}

// protocolCitation is one citation of docs/protocol.md in a file.
type protocolCitation struct {
	line    int
	section string
	title   string // the quoted title after the citation, "" if none
}

// protocolCitations finds the citations of docs/protocol.md in src, as the
// comment at the top of this file defines them.
func protocolCitations(src string) []protocolCitation {
	lineAt := func(off int) int { return strings.Count(src[:off], "\n") + 1 }
	var out []protocolCitation
	for _, m := range protocolSignRE.FindAllStringSubmatchIndex(src, -1) {
		lineStart := strings.LastIndexByte(src[:m[0]], '\n') + 1
		if d := otherDocRE.FindStringSubmatch(src[lineStart:m[0]]); d != nil && !strings.HasSuffix(d[1], "protocol.md") {
			continue
		}
		c := protocolCitation{line: lineAt(m[0]), section: src[m[2]:m[3]]}
		if m[4] >= 0 {
			c.title = strings.TrimSpace(commentBreakRE.ReplaceAllString(src[m[4]:m[5]], " "))
		}
		out = append(out, c)
	}
	for _, m := range protocolWordRE.FindAllStringSubmatchIndex(src, -1) {
		out = append(out, protocolCitation{line: lineAt(m[0]), section: src[m[2]:m[3]]})
	}
	slices.SortStableFunc(out, func(a, b protocolCitation) int { return a.line - b.line })
	return out
}

// citationProblem says what is wrong with c, or "" when it names an existing
// section (and, with a title, a heading of that section or below it).
func citationProblem(secs map[string]protocolSection, c protocolCitation) string {
	if _, ok := secs[c.section]; !ok {
		return fmt.Sprintf("cites protocol.md §%s, which %s does not have", c.section, protocolDocPath)
	}
	if c.title == "" {
		return ""
	}
	for n, s := range secs {
		if (n == c.section || strings.HasPrefix(n, c.section+".")) && strings.EqualFold(s.title, c.title) {
			return ""
		}
	}
	return fmt.Sprintf("cites protocol.md §%s as %q, but no heading of §%s or its subsections has that title", c.section, c.title, c.section)
}

// TestProtocolDocCitations: every citation of docs/protocol.md in a .go or
// .md file of the module names an existing section.
func TestProtocolDocCitations(t *testing.T) {
	doc, err := os.ReadFile(protocolDocPath)
	if err != nil {
		t.Fatalf("the protocol specification is missing: %v", err)
	}
	secs, problems := parseProtocolSections(string(doc))
	for _, p := range problems {
		t.Errorf("%s: %s", protocolDocPath, p)
	}
	for _, want := range []string{"1", "2", "3", "4", "5", "5.1", "5.9", "6", "6.7", "7", "8"} {
		if _, ok := secs[want]; !ok {
			t.Errorf("%s: section %s is missing (the code's citations were numbered against it)", protocolDocPath, want)
		}
	}

	checked := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .git and the like
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range protocolCitations(string(src)) {
			checked++
			if p := citationProblem(secs, c); p != "" {
				t.Errorf("%s:%d: %s", filepath.ToSlash(path), c.line, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no citation of protocol.md at all: the pattern no longer matches how the code cites")
	}
	t.Logf("%d citations checked against %d sections", checked, len(secs))
}

// TestProtocolCitationPattern pins the citation pattern on the forms the
// repository uses, and shows that a missing section or a wrong title is
// reported.
func TestProtocolCitationPattern(t *testing.T) {
	tests := []struct {
		src  string
		want []string // "line:section" or "line:section title"
	}{
		{"// an auth rejection (protocol.md §5.5) drops it", []string{"1:5.5"}},
		{"// oracle (protocol.md §4, §5.3).", []string{"1:4", "1:5.3"}},
		{"// pins §4/§5.9: a close", []string{"1:4", "1:5.9"}},
		{"// the protocol (docs/protocol.md §4 and §5.)", []string{"1:4", "1:5"}},
		{"// budget (protocol.md\n// §6.7): a receiver", []string{"2:6.7"}},
		{"// headers at once (protocol.md §4, \"Call start\"), admit", []string{"1:4 Call start"}},
		{"// every rule of docs/protocol.md §5 (\"Client\n// obligations\"), black-box", []string{"1:5 Client obligations"}},
		{"// protocol.md section 8, end to end", []string{"1:8"}},
		{"// protocol.md\n// section 8, end to end", []string{"1:8"}},
		{"- every §8 scenario, in README", []string{"1:8"}},
		{"// The sequence of issue 7, §2: alice and carol", nil},
		{"// fields (RFC 6749, section 5.2), when present", nil},
		{"// see architecture.md §3", nil},
		{"// no citation: §, § 5, section 5", nil},
	}
	for _, tc := range tests {
		var got []string
		for _, c := range protocolCitations(tc.src) {
			s := fmt.Sprintf("%d:%s", c.line, c.section)
			if c.title != "" {
				s += " " + c.title
			}
			got = append(got, s)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("protocolCitations(%q) = %q, want %q", tc.src, got, tc.want)
		}
	}

	doc := "# Title\n\n## 4. Exchanges\n\n### 4.6 Call start\n\n```\n## 9. Not a heading\n```\n\n## 5. Client obligations\n\n### 5.5 Recovery\n"
	secs, problems := parseProtocolSections(doc)
	if len(problems) != 0 {
		t.Fatalf("problems in a well-formed document: %q", problems)
	}
	for _, tc := range []struct {
		c  protocolCitation
		ok bool
	}{
		{protocolCitation{section: "5.5"}, true},
		{protocolCitation{section: "4", title: "call start"}, true},
		{protocolCitation{section: "5", title: "Client obligations"}, true},
		{protocolCitation{section: "9"}, false},    // inside a code block
		{protocolCitation{section: "5.10"}, false}, // missing
		{protocolCitation{section: "5", title: "Call start"}, false},
	} {
		if p := citationProblem(secs, tc.c); (p == "") != tc.ok {
			t.Errorf("citationProblem(%+v) = %q, want ok=%v", tc.c, p, tc.ok)
		}
	}

	_, problems = parseProtocolSections("## 5. A\n### 5.1 B\n### 5.1 C\n### 6.1 D\n")
	if len(problems) != 2 {
		t.Errorf("a duplicate number and an orphan subsection gave problems %q, want 2", problems)
	}
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
