package server

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// A record batch carries no schema: its header lists field nodes and
// buffers, which a reader maps onto the stream's schema in order. Counting
// what the schema expects is how the server refuses a batch of another
// schema (one column more or less, a string where an integer was) instead
// of reading it askew; a batch whose layout is the same as the schema's
// (an int64 column sent for a float64 one) cannot be told apart by anyone.

// ipcLayout is what a schema's record batches hold.
type ipcLayout struct {
	nodes   int
	buffers int  // valid only when known
	known   bool // every type's buffer count is known (no view or variadic types)
}

// schemaLayout returns the node and buffer counts of schema's record
// batches, or an error naming a column of a type the server does not take
// (dictionary-encoded: a Zerobus frame carries no dictionary batches).
func schemaLayout(schema *arrow.Schema) (ipcLayout, error) {
	l := ipcLayout{known: true}
	for _, f := range schema.Fields() {
		if err := l.add(f.Type, f.Name); err != nil {
			return ipcLayout{}, err
		}
	}
	return l, nil
}

func (l *ipcLayout) add(dt arrow.DataType, path string) error {
	if ext, ok := dt.(arrow.ExtensionType); ok {
		dt = ext.StorageType()
	}
	if dt.ID() == arrow.DICTIONARY {
		return fmt.Errorf("column %s is dictionary-encoded, which Arrow ingestion does not carry", path)
	}
	l.nodes++
	n, ok := ipcBufferCount(dt.ID())
	l.buffers += n
	l.known = l.known && ok
	if nested, isNested := dt.(arrow.NestedType); isNested {
		for _, c := range nested.Fields() {
			if err := l.add(c.Type, path+"."+c.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// ipcBufferCount is how many buffers the IPC format writes for one node of
// a type (Columnar.rst, "Buffer listing for each layout"; version 5, which
// writes no validity buffer for null and union types), and false for the
// types whose count varies or is not listed here.
func ipcBufferCount(id arrow.Type) (int, bool) {
	switch id {
	case arrow.NULL, arrow.RUN_END_ENCODED:
		return 0, true
	case arrow.STRUCT, arrow.FIXED_SIZE_LIST, arrow.SPARSE_UNION:
		return 1, true
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY,
		arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW:
		return 3, true
	case arrow.STRING_VIEW, arrow.BINARY_VIEW:
		return 0, false // two plus the batch's variadic data buffers
	case arrow.BOOL, arrow.UINT8, arrow.INT8, arrow.UINT16, arrow.INT16,
		arrow.UINT32, arrow.INT32, arrow.UINT64, arrow.INT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64,
		arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME,
		arrow.INTERVAL_MONTH_DAY_NANO, arrow.DECIMAL32, arrow.DECIMAL64,
		arrow.DECIMAL128, arrow.DECIMAL256, arrow.FIXED_SIZE_BINARY,
		arrow.LIST, arrow.LARGE_LIST, arrow.MAP, arrow.DENSE_UNION:
		return 2, true
	}
	return 0, false
}
