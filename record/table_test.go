package record_test

import (
	"errors"
	"testing"

	"github.com/zbstream/zbstream/record"
)

func TestCheckTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"main.default.events", true},
		{"a.b.c", true},
		{"é.b.c", true},
		{" a.b.c", true}, // white space is the server's storage rule, not the name's
		{"", false},
		{"a", false},
		{"a.b", false},
		{"a.b.c.d", false},
		{".b.c", false},
		{"a..c", false},
		{"a.b.", false},
		{"..", false},
	} {
		err := record.CheckTable(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckTable(%q) = %v, want ok %v", tc.name, err, tc.ok)
			continue
		}
		var te *record.TableError
		if !tc.ok && (!errors.As(err, &te) || te.Name != tc.name) {
			t.Errorf("CheckTable(%q) = %#v, want a *TableError naming it", tc.name, err)
		}
	}
	if got, want := record.CheckTable("a.b").Error(), `"a.b" is not catalog.schema.table`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
