package zbstream_test

// Comments, tests and the documents cite docs/ files (and, now and then,
// the README) by path and section. TestDocCitations keeps every such
// citation pointing at a file and a heading that exist, as
// TestProtocolDocCitations does for protocol.md's numbered sections.
//
// What counts as a citation:
//
//   - In a .go file, a path under docs/ ("docs/server.md"), optionally
//     followed by a quoted heading, `docs/server.md, "Memory"` or
//     `docs/server.md "Memory"` (the title may wrap onto the next //
//     comment line), or by an anchor, "docs/server.md#memory".
//   - In a .go file, `README, "Title"` or `README's "Title"`: the README's
//     heading.
//   - In README.md and docs/*.md, a relative Markdown link to a .md file,
//     with or without an anchor: "[server.md](server.md#memory)".
//
// A heading matches a quoted title when its text equals it; an anchor
// matches when it is the heading's GitHub anchor (lower case, spaces to
// hyphens, punctuation dropped).

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// docPathRE matches docs/NAME.EXT, then an optional anchor or quoted
	// title.
	docPathRE = regexp.MustCompile(`\bdocs/([\w.-]+\.(?:md|svg))(?:#([\w-]+)|(?:,?[ \t]+|'s[ \t]+)"((?:[^"\n]|\n[ \t]*//){1,80})")?`)
	// readmeTitleRE matches the README cited with a quoted title.
	readmeTitleRE = regexp.MustCompile(`\bREADME(?:,|'s)?[ \t]+"((?:[^"\n]|\n[ \t]*//){1,80})"`)
	// mdLinkRE matches a relative Markdown link to a .md file.
	mdLinkRE = regexp.MustCompile(`\]\(([\w./-]+\.md)(?:#([\w-]+))?\)`)
	// headingRE matches a Markdown heading outside code blocks.
	headingRE = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)[ \t]*$`)
)

// docHeadings returns the headings of a Markdown file (those inside
// fenced code blocks excluded), or nil if it does not exist.
func docHeadings(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil && !fenced {
			out = append(out, m[1])
		}
	}
	if out == nil {
		out = []string{} // exists, no heading
	}
	return out
}

// anchorOf is a heading's GitHub anchor.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkCitation reports a citation of file (a path from the module root)
// whose heading (by title or by anchor) does not exist.
func checkCitation(t *testing.T, at, file, anchor, title string) {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		t.Errorf("%s cites %s, which does not exist", at, file)
		return
	}
	if anchor == "" && title == "" || !strings.HasSuffix(file, ".md") {
		return
	}
	title = commentBreakRE.ReplaceAllString(title, " ")
	for _, h := range docHeadings(t, file) {
		if title != "" && h == title || anchor != "" && anchorOf(h) == anchor {
			return
		}
	}
	t.Errorf("%s cites %s, section %q%s, which it does not have", at, file, title, anchor)
}

func TestDocCitations(t *testing.T) {
	count := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		isGo := strings.HasSuffix(path, ".go")
		isDoc := path == "README.md" || strings.HasPrefix(path, "docs"+string(filepath.Separator)) && strings.HasSuffix(path, ".md")
		if !isGo && !isDoc || path == "docs_citations_test.go" { // its doc comment shows the patterns
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		line := func(i int) string { return path + ":" + strconv.Itoa(strings.Count(text[:i], "\n")+1) }
		if isGo {
			for _, m := range docPathRE.FindAllStringSubmatchIndex(text, -1) {
				count++
				checkCitation(t, line(m[0]), "docs/"+text[m[2]:m[3]], sub(text, m, 4), sub(text, m, 6))
			}
			for _, m := range readmeTitleRE.FindAllStringSubmatchIndex(text, -1) {
				count++
				checkCitation(t, line(m[0]), "README.md", "", sub(text, m, 2))
			}
			return nil
		}
		for _, m := range mdLinkRE.FindAllStringSubmatchIndex(text, -1) {
			target := filepath.Join(filepath.Dir(path), text[m[2]:m[3]])
			if strings.HasPrefix(target, "..") {
				continue // outside the repository: not ours to check
			}
			count++
			checkCitation(t, line(m[0]), filepath.ToSlash(target), sub(text, m, 4), "")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count < 10 {
		t.Fatalf("found only %d citations: is the pattern still right?", count)
	}
	t.Logf("%d citations checked", count)
}

// sub is submatch k of m in s, or "".
func sub(s string, m []int, k int) string {
	if m[k] < 0 {
		return ""
	}
	return s[m[k]:m[k+1]]
}
