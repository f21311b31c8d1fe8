package server

// Table definitions: the Unity Catalog schemas the server checks the
// records of a table against (Options.Tables, docs/server.md "Tables with
// schemas"), loaded from the tables API's JSON.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zbstream/zbstream/record"
)

// maxTablesFile bounds one file LoadTables reads: a table definition is a
// few KiB; a file of many MiB is a mistake, not a schema.
const maxTablesFile = 16 << 20

// Tables holds the table definitions of a server: for each table name
// (catalog.schema.table), its Unity Catalog schema and the checks built
// from it. A Tables is immutable and safe for concurrent use.
type Tables struct {
	byName map[string]*tableDef
}

// tableDef is one table's definition.
type tableDef struct {
	name  string
	raw   []byte // the definition as given, compact JSON: what the tables API serves
	check *record.TableChecker
}

// TableDefinitionError is a table definition LoadTables or NewTables
// refuses: Source names where it came from (a file, and the definition's
// index in it from 1, or its place in NewTables' arguments), Table the
// table when known.
type TableDefinitionError struct {
	Source string
	Table  string
	Err    error
}

// Error names the source, the table and the reason.
func (e *TableDefinitionError) Error() string {
	if e.Table != "" {
		return fmt.Sprintf("table definition %s (%s): %v", e.Source, e.Table, e.Err)
	}
	return fmt.Sprintf("table definition %s: %v", e.Source, e.Err)
}

// Unwrap returns the reason (a *record.SchemaError when the columns do not
// map).
func (e *TableDefinitionError) Unwrap() error { return e.Err }

// NewTables returns the definitions of the given schemas. Each must name
// its table, by FullName or by CatalogName, SchemaName and Name (both, if
// given, must agree), as a table name the server accepts, and its columns
// must map to proto (record.NewTableChecker). A table given twice is an
// error.
func NewTables(schemas ...*record.TableSchema) (*Tables, error) {
	t := &Tables{byName: map[string]*tableDef{}}
	for i, s := range schemas {
		if s == nil {
			return nil, &TableDefinitionError{Source: fmt.Sprintf("#%d", i+1), Err: errors.New("nil schema")}
		}
		raw, err := json.Marshal(s)
		if err != nil {
			return nil, &TableDefinitionError{Source: fmt.Sprintf("#%d", i+1), Err: err}
		}
		if err := t.add(s, raw, fmt.Sprintf("#%d", i+1)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// LoadTables reads table definitions from path: a file, or a directory
// whose *.json files (not its subdirectories) are read in name order. A
// file holds JSON values one after another, each a table object as the
// Unity Catalog tables API returns it (GET
// /api/2.1/unity-catalog/tables/{full_name}; fields other than the names
// and columns are kept and served, not checked) or an array of them; so
// the API's answers, saved and concatenated, make a file. No definition
// at all is an error, as is any definition NewTables refuses.
func LoadTables(path string) (*Tables, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("tables: %w", err)
		}
		files = files[:0]
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("tables: directory %s holds no *.json file", path)
		}
	}
	t := &Tables{byName: map[string]*tableDef{}}
	for _, f := range files {
		if err := t.loadFile(f); err != nil {
			return nil, err
		}
	}
	if len(t.byName) == 0 {
		return nil, fmt.Errorf("tables: %s holds no table definition", path)
	}
	return t, nil
}

// loadFile adds the definitions of one file.
func (t *Tables) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTablesFile+1))
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	if len(b) > maxTablesFile {
		return fmt.Errorf("tables: %s is larger than %d bytes", path, maxTablesFile)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return &TableDefinitionError{Source: fmt.Sprintf("%s #%d", path, n+1), Err: fmt.Errorf("not JSON: %w", err)}
		}
		objs := []json.RawMessage{v}
		if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
			if err := json.Unmarshal(v, &objs); err != nil {
				return &TableDefinitionError{Source: fmt.Sprintf("%s #%d", path, n+1), Err: fmt.Errorf("an array of tables: %w", err)}
			}
		}
		for _, o := range objs {
			n++
			src := fmt.Sprintf("%s #%d", path, n)
			s, err := record.ParseTableSchema(o)
			if err != nil {
				return &TableDefinitionError{Source: src, Err: err}
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, o); err != nil {
				return &TableDefinitionError{Source: src, Err: err}
			}
			if err := t.add(s, compact.Bytes(), src); err != nil {
				return err
			}
		}
	}
}

// add checks and adds one definition.
func (t *Tables) add(s *record.TableSchema, raw []byte, src string) error {
	name, err := definitionName(s)
	if err != nil {
		return &TableDefinitionError{Source: src, Err: err}
	}
	if _, dup := t.byName[name]; dup {
		return &TableDefinitionError{Source: src, Table: name, Err: errors.New("the table is defined twice")}
	}
	check, err := record.NewTableChecker(s)
	if err != nil {
		return &TableDefinitionError{Source: src, Table: name, Err: err}
	}
	t.byName[name] = &tableDef{name: name, raw: raw, check: check}
	return nil
}

// definitionName is the table a definition names: its full_name, or its
// catalog_name.schema_name.name; each of those given beside a full_name
// must be the full_name's part.
func definitionName(s *record.TableSchema) (string, error) {
	name := s.FullName
	if name == "" {
		if s.CatalogName == "" || s.SchemaName == "" || s.Name == "" {
			return "", errors.New("no full_name, nor catalog_name, schema_name and name")
		}
		name = s.CatalogName + "." + s.SchemaName + "." + s.Name
	}
	if !validTableName(name) {
		return "", fmt.Errorf("%q is not catalog.schema.table in valid UTF-8", clip(name))
	}
	parts := strings.Split(name, ".")
	for i, p := range []string{s.CatalogName, s.SchemaName, s.Name} {
		if p != "" && p != parts[i] {
			return "", fmt.Errorf("full_name %q does not match %s %q", name, [...]string{"catalog_name", "schema_name", "name"}[i], clip(p))
		}
	}
	return name, nil
}

// lookup returns the definition of table, nil when it has none (a nil
// Tables has none).
func (t *Tables) lookup(table string) *tableDef {
	if t == nil {
		return nil
	}
	return t.byName[table]
}

// Schema returns the schema of table, and whether it has a definition.
func (t *Tables) Schema(table string) (*record.TableSchema, bool) {
	d := t.lookup(table)
	if d == nil {
		return nil, false
	}
	s := *d.check.Schema()
	s.Columns = slices.Clone(s.Columns) // the caller's to change
	return &s, true
}

// Names returns the names of the defined tables, sorted.
func (t *Tables) Names() []string {
	if t == nil {
		return nil
	}
	names := make([]string, 0, len(t.byName))
	for n := range t.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
