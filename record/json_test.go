package record

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkJSONReference is the definition CheckJSON implements (and the
// server's previous, two-pass code): a top-level object, valid UTF-8,
// valid for encoding/json.
func checkJSONReference(rec []byte) string {
	t := bytes.TrimLeft(rec, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return "not a JSON object"
	}
	if !utf8.Valid(rec) {
		return "invalid UTF-8"
	}
	if !json.Valid(rec) {
		return "invalid JSON"
	}
	return ""
}

func checkJSONResult(rec []byte) string {
	if err := CheckJSON(rec); err != nil {
		return err.Error()
	}
	return ""
}

func jsonSeeds() []string {
	deep := func(n int, open, close string) string {
		return "{\"a\":" + strings.Repeat(open, n-1) + strings.Repeat(close, n-1) + "}"
	}
	return []string{
		``, ` `, `{`, `}`, `{}`, ` {} `, "\t\r\n{}\n", `[]`, `"s"`, `1`, `null`, `{}{}`, `{},`, `{} x`,
		`{"a":1}`, `{"a":-0.5e+10}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1E-2}`,
		`{"a":+1}`, `{"a":-01}`, `{"a":0.0e0}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":}`, `{a:1}`,
		`{"a":[1,2,{"b":[]}]}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":true,"b":false,"c":null}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":falsey}`, `{"a":"\u00e9\n\t\"\\\/\b\f\r"}`, `{"a":"\u00g0"}`,
		`{"a":"\x"}`, "{\"a\":\"\x01\"}", "{\"a\":\"\x7f\"}", "{\"a\":\"é\"}", "{\"a\":\"\xff\"}",
		"{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xc0\xaf\"}", "{\"a\":1}\xff", "\xef\xbb\xbf{}", "{\"a\":\"\xe2\x82\"}",
		`{"a":"unterminated}`, `{"a":"\`, `{"a":"\u12`, `{"":""}`, `{"a":{"b":{"c":{}}}}`,
		deep(20, "[", "]"), deep(20, `{"x":`, "}"),
	}
}

// deepSeeds are at encoding/json's nesting limit and just past it (too
// large to be good fuzz seeds).
func deepSeeds() []string {
	deep := func(n int, open, close string) string {
		return "{\"a\":" + strings.Repeat(open, n-1) + strings.Repeat(close, n-1) + "}"
	}
	return []string{
		deep(maxJSONDepth, "[", "]"), deep(maxJSONDepth+1, "[", "]"), deep(maxJSONDepth-1, "[", "]"),
		deep(maxJSONDepth, `{"x":`, "}"), deep(maxJSONDepth+1, `{"x":`, "}"),
	}
}

func TestCheckJSONMatchesReference(t *testing.T) {
	for _, s := range append(jsonSeeds(), deepSeeds()...) {
		if got, want := checkJSONResult([]byte(s)), checkJSONReference([]byte(s)); got != want {
			t.Errorf("CheckJSON(%.60q) = %q, reference %q", s, got, want)
		}
	}
}

// FuzzCheckJSON compares CheckJSON with its reference on arbitrary input:
// the fast validator refuses everything encoding/json.Valid refuses (and
// invalid UTF-8), and accepts everything else.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range jsonSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		if got, want := checkJSONResult(rec), checkJSONReference(rec); got != want {
			t.Fatalf("CheckJSON(%q) = %q, reference %q", rec, got, want)
		}
	})
}

func BenchmarkCheckJSON(b *testing.B) {
	rec := []byte(`{"k":"` + strings.Repeat("x", 1016) + `"}`)
	obj := []byte(`{"id":12345,"name":"Ada Lovelace","tags":["a","b","c"],"score":-12.5e3,"ok":true,"nested":{"x":null,"y":"h\u00e9llo"}}`)
	for name, r := range map[string][]byte{"1KiB-string": rec, "object": obj} {
		b.Run(name+"/CheckJSON", func(b *testing.B) {
			b.SetBytes(int64(len(r)))
			for b.Loop() {
				if CheckJSON(r) != nil {
					b.Fatal("refused")
				}
			}
		})
		b.Run(name+"/reference", func(b *testing.B) {
			b.SetBytes(int64(len(r)))
			for b.Loop() {
				if checkJSONReference(r) != "" {
					b.Fatal("refused")
				}
			}
		})
	}
}
