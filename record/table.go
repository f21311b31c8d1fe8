package record

import (
	"fmt"
	"strings"
)

// TableError reports a name that is not a table name.
type TableError struct {
	Name string
}

func (e *TableError) Error() string {
	return fmt.Sprintf("%q is not catalog.schema.table", e.Name)
}

// CheckTable reports whether name is a table name, catalog.schema.table:
// exactly three non-empty dot-separated parts. It returns a *TableError
// otherwise. Every table a stream is opened for, a Writer is given or a
// token is scoped to passes it; the reference server refuses more (names
// in invalid UTF-8, parts with surrounding white space) because of how it
// stores them.
func CheckTable(name string) error {
	parts := strings.Split(name, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return &TableError{Name: name}
	}
	return nil
}
