package writer

import (
	"github.com/zbstream/zbstream"
	"github.com/zbstream/zbstream/core"
)

// TableError is an error of one table of a Writer: it names the table and
// wraps the cause, so errors.Is and errors.As see through it
// ([zbstream.ErrClosed], [zbstream.ErrStreamFailed],
// *[zbstream.ConnectionError], *[zbstream.LimitError], ...). Flush and
// Close return one per table that failed, joined (errors.Join);
// errors.As finds the first, and Writer.Failed lists them all. Its
// message starts with "zbstream: table " and the table's name.
type TableError struct {
	// Table is the table, catalog.schema.table.
	Table string
	// Err is the cause.
	Err error
}

// Error returns "zbstream: table <table>: " and the cause's message
// without its own "zbstream: " prefix.
func (e *TableError) Error() string {
	name := e.Table
	if name == "" {
		name = `""`
	}
	return core.Prefix + "table " + name + ": " + core.Unprefixed(e.Err)
}

// Unwrap returns the cause.
func (e *TableError) Unwrap() error { return e.Err }

// tableErr wraps err as table's *TableError, once: nil stays nil, and an
// error that already names table is returned as it is.
func tableErr(table string, err error) error {
	if err == nil {
		return nil
	}
	if te, ok := err.(*TableError); ok && te.Table == table {
		return err
	}
	return &TableError{Table: table, Err: err}
}

// errWriterClosed is what calls made after Close return.
var errWriterClosed = core.Errorf("%w: the writer is closed", zbstream.ErrClosed)
