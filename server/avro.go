package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/hamba/avro/v2"

	ingestpb "github.com/zbstream/zbstream/proto"
	"github.com/zbstream/zbstream/record"
)

// recordChecker checks the records of one stream: package record's
// Checker for PROTO and JSON streams, avroChecker for AVRO streams (the
// library packages, record among them, do not depend on an Avro library).
type recordChecker interface {
	Type() ingestpb.RecordType
	CheckCall(recs [][]byte) error
}

// newChecker returns the checker of a stream of record type typ, created
// with descriptor (PROTO) or avroSchema (AVRO). Its error says why a create
// is refused.
func newChecker(typ ingestpb.RecordType, descriptor []byte, avroSchema string) (recordChecker, error) {
	if typ == ingestpb.RecordType_AVRO {
		c, err := newAvroChecker(avroSchema)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	c, err := record.NewChecker(typ, descriptor)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// avroChecker checks the datums of an AVRO stream against its writer
// schema, which is parsed and compiled once per stream (avro_datum.go
// walks the compiled form). It is immutable and safe for concurrent use.
type avroChecker struct {
	schema *avro.RecordSchema // for a table's fit (avroFitsTable)
	root   *avroNode
}

// newAvroChecker parses a stream's writer schema: JSON in valid UTF-8
// (so that every engine stores it as sent), an Avro schema, and a record
// schema whose datums can be finite.
func newAvroChecker(schema string) (*avroChecker, error) {
	if schema == "" {
		return nil, errors.New("record_type AVRO requires avro_schema_json")
	}
	if !utf8.ValidString(schema) {
		return nil, errors.New("avro_schema_json is not valid UTF-8")
	}
	if err := json.Unmarshal([]byte(schema), new(json.RawMessage)); err != nil {
		return nil, fmt.Errorf("avro_schema_json is not valid JSON: %w", err)
	}
	s, err := parseAvroSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("invalid avro_schema_json: %s", clip(err.Error()))
	}
	rec, ok := s.(*avro.RecordSchema)
	if !ok || rec.IsError() {
		what := string(s.Type())
		if ok {
			what = "error"
		}
		return nil, fmt.Errorf("avro_schema_json must be an Avro record schema; it is of type %q", what)
	}
	root, err := compileAvro(rec)
	if err != nil {
		return nil, fmt.Errorf("invalid avro_schema_json: %w", err)
	}
	return &avroChecker{schema: rec, root: root}, nil
}

// parseAvroSchema parses schema with a cache of its own: hamba/avro's
// default cache is global, so a name that one stream's schema defines
// would resolve in another's, and the cache would grow with every stream.
// A panic of the parser on input no one tested becomes an error.
func parseAvroSchema(schema string) (s avro.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("avro: schema parser failed: %v", p)
		}
	}()
	return avro.ParseWithCache(schema, "", &avro.SchemaCache{})
}

// Type implements recordChecker.
func (c *avroChecker) Type() ingestpb.RecordType { return ingestpb.RecordType_AVRO }

// CheckCall implements recordChecker: every datum must decode completely
// under the writer schema, with no byte left over. The error names the
// record type and, in a batch, the datum's index, as record.Checker's do.
func (c *avroChecker) CheckCall(recs [][]byte) error {
	return record.CheckEach(c.Type(), recs, c.check)
}

// sameAvroSchema reports whether two writer schemas are the same: equal
// text, or equal JSON values (white space and the order of an object's
// members aside). A stream created again with a schema that is not the
// same is refused.
func sameAvroSchema(a, b string) bool {
	if a == b {
		return true
	}
	va, okA := jsonValue(a)
	vb, okB := jsonValue(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

// jsonValue decodes s, keeping numbers as their text.
func jsonValue(s string) (any, bool) {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}
