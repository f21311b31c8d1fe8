package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbstream/zbstream/record"
)

var nestedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "ship", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
	{Name: "labels", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
}, nil)

// nestedFrame returns the schema header and one batch's header and body
// (written with opts: compression).
func nestedFrame(t testing.TB, opts ...ipc.Option) (schemaHeader, header, body []byte) {
	t.Helper()
	sp := ipc.GetSchemaPayload(nestedSchema, memory.DefaultAllocator)
	defer sp.Release()
	schemaHeader = bytes.Clone(sp.Meta().Bytes())
	b := array.NewRecordBuilder(memory.DefaultAllocator, nestedSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"a", ""}, []bool{true, false})
	lb := b.Field(2).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).Append("x")
	lb.AppendNull()
	sb := b.Field(3).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.StringBuilder).Append("Paris")
	sb.FieldBuilder(1).(*array.Int32Builder).Append(75001)
	sb.AppendNull()
	sb.FieldBuilder(0).(*array.StringBuilder).Append("")
	sb.FieldBuilder(1).(*array.Int32Builder).AppendNull()
	mb := b.Field(4).(*array.MapBuilder)
	mb.Append(true)
	mb.KeyBuilder().(*array.StringBuilder).Append("k")
	mb.ItemBuilder().(*array.Int64Builder).Append(9)
	mb.AppendNull()
	rec := b.NewRecordBatch()
	defer rec.Release()
	p, err := ipc.GetRecordBatchPayload(rec, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	m := p.Meta()
	defer m.Release()
	var buf bytes.Buffer
	if err := p.SerializeBody(&buf); err != nil {
		t.Fatal(err)
	}
	return schemaHeader, bytes.Clone(m.Bytes()), buf.Bytes()
}

// TestPeekHeader: the counts read from a record batch header are the
// schema's (a map is four nodes: itself, its entries, key and value).
func TestPeekHeader(t *testing.T) {
	sh, h, body := nestedFrame(t)
	hs, err := peekHeader(sh)
	if err != nil || hs.typ != ipcSchema || hs.bodyLen != 0 {
		t.Fatalf("schema header: %+v, %v", hs, err)
	}
	hb, err := peekHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	want := ipcHeader{typ: ipcRecordBatch, bodyLen: int64(len(body)), length: 2, nodes: 1 + 1 + 2 + 3 + 4, buffers: 2 + 3 + (2 + 3) + (1 + 3 + 2) + (2 + 1 + 3 + 2)}
	if hb != want {
		t.Errorf("batch header %+v, want %+v", hb, want)
	}
	l, err := schemaLayout(nestedSchema)
	if err != nil || l != (ipcLayout{nodes: want.nodes, buffers: want.buffers, known: true}) {
		t.Errorf("layout %+v, %v; want the header's counts", l, err)
	}
}

// TestDecodeHostileHeaders: truncated and corrupted headers and bodies are
// errors, never panics, and a good frame still decodes after them in a
// fresh decoder.
func TestDecodeHostileHeaders(t *testing.T) {
	sh, h, body := nestedFrame(t)
	for n := range len(h) {
		if _, err := peekHeader(h[:n]); err == nil && n < 8 {
			t.Errorf("a %d-byte header was read", n)
		}
		d, err := newFrameDecoder(sh)
		if err != nil {
			t.Fatal(err)
		}
		d.decode(h[:n], body) //nolint:errcheck // only that it returns
		d.close()
	}
	for i := range h {
		for _, v := range []byte{0x00, 0x7f, 0xff} {
			bad := bytes.Clone(h)
			bad[i] = v
			d, err := newFrameDecoder(sh)
			if err != nil {
				t.Fatal(err)
			}
			d.decode(bad, body) //nolint:errcheck // only that it returns
			d.close()
		}
	}
	for i := range sh {
		for _, v := range []byte{0x00, 0x7f, 0xff} {
			bad := bytes.Clone(sh)
			bad[i] = v
			if d, err := newFrameDecoder(bad); err == nil {
				d.close()
			}
		}
	}
	d, err := newFrameDecoder(sh)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	if rows, err := d.decode(h, body); err != nil || rows != 2 {
		t.Fatalf("decode: %d rows, %v; want 2", rows, err)
	}
}

// TestDecodeCompressedClaims: a compressed buffer that claims a huge
// uncompressed size is refused before arrow-go allocates it; the frame
// as written decodes.
func TestDecodeCompressedClaims(t *testing.T) {
	sh, h, body := nestedFrame(t, ipc.WithLZ4())
	d, err := newFrameDecoder(sh)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	bad := bytes.Clone(body)
	binary.LittleEndian.PutUint64(bad, 1<<40) // the first buffer's prefix
	if _, err := d.decode(h, bad); err == nil || !strings.Contains(err.Error(), "uncompressed") {
		t.Fatalf("decode of a 1 TiB claim: %v, want a refusal", err)
	}
	d2, err := newFrameDecoder(sh)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.close()
	if rows, err := d2.decode(h, body); err != nil || rows != 2 {
		t.Fatalf("decode: %d rows, %v; want 2", rows, err)
	}
}

// FuzzArrowFrame: any header and body are decoded or refused, never a
// panic, under a schema with nested columns.
func FuzzArrowFrame(f *testing.F) {
	sh, h, body := nestedFrame(f)
	f.Add(h, body)
	f.Add(h[:len(h)/2], body)
	f.Add(h, body[:len(body)/2])
	f.Fuzz(func(t *testing.T, header, body []byte) {
		d, err := newFrameDecoder(sh)
		if err != nil {
			t.Fatal(err)
		}
		defer d.close()
		d.decode(header, body) //nolint:errcheck // only that it returns
	})
}

// FuzzArrowSchema: any schema header is read or refused, never a panic,
// an unbounded allocation or recursion.
func FuzzArrowSchema(f *testing.F) {
	sh, _, _ := nestedFrame(f)
	f.Add(sh)
	f.Add(sh[:len(sh)/2])
	f.Fuzz(func(t *testing.T, header []byte) {
		if d, err := newFrameDecoder(header); err == nil {
			d.close()
		}
	})
}

func TestParseOffsetMeta(t *testing.T) {
	for in, want := range map[string]int64{
		`{"offset_id":0}`: 0, ` {"offset_id": 41} `: 41, `{"x":[{"offset_id":3}],"offset_id":9223372036854775807}`: 1<<63 - 1,
	} {
		if got, err := parseOffsetMeta([]byte(in)); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{``, ` `, `{}`, `{"offset_id":1e2}`, `{"offset_id":9223372036854775808}`, `{"offset_id":true}`,
		`{"offset_id":0`, `{"offset_id":0}}`, `{"offset_id":0}{"offset_id":0}`, `null`, `"{\"offset_id\":0}"`, `{"Offset_Id":0}`} {
		if got, err := parseOffsetMeta([]byte(in)); !errors.Is(err, errOffsetMeta) {
			t.Errorf("%s: %d, %v; want an errOffsetMeta", in, got, err)
		}
	}
}

// TestArrowFitsTable: an Arrow schema against the columns id BIGINT NOT
// NULL, at TIMESTAMP, tags ARRAY<STRING>, ship STRUCT<city STRING NOT
// NULL, zip INT>.
func TestArrowFitsTable(t *testing.T) {
	c, err := record.NewTableChecker(&record.TableSchema{Name: "events", Columns: []record.Column{
		{Name: "id", TypeName: "LONG"},
		{Name: "at", TypeName: "TIMESTAMP", Position: 1, Nullable: true},
		{Name: "tags", TypeName: "ARRAY", Position: 2, Nullable: true, TypeJSON: `{"type":"array","elementType":"string","containsNull":false}`},
		{Name: "ship", TypeName: "STRUCT", Position: 3, Nullable: true, TypeJSON: `{"type":"struct","fields":[{"name":"city","type":"string","nullable":false},{"name":"zip","type":"integer","nullable":true}]}`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64}
	us := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	ship := arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int16, Nullable: true})
	for _, tc := range []struct {
		fields []arrow.Field
		field  string // "" : fits
	}{
		{[]arrow.Field{id}, ""},
		{[]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "at", Type: us, Nullable: true}, {Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true}, {Name: "ship", Type: ship, Nullable: true}}, ""},
		{[]arrow.Field{id, {Name: "at", Type: arrow.PrimitiveTypes.Int64}}, ""},
		{[]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, "id"},
		{[]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Float64}}, "id"},
		{[]arrow.Field{{Name: "at", Type: us}}, "id"},
		{[]arrow.Field{id, {Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond}}}, "at"},
		{[]arrow.Field{id, {Name: "x", Type: arrow.PrimitiveTypes.Int64}}, "x"},
		{[]arrow.Field{id, {Name: "tags", Type: arrow.BinaryTypes.String}}, "tags"},
		{[]arrow.Field{id, {Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, "tags[]"},
		{[]arrow.Field{id, {Name: "ship", Type: arrow.StructOf(arrow.Field{Name: "zip", Type: arrow.PrimitiveTypes.Int32})}}, "ship.city"},
		{[]arrow.Field{id, {Name: "ship", Type: arrow.StructOf(arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true})}}, "ship.city"},
	} {
		err := arrowFitsTable(arrow.NewSchema(tc.fields, nil), c.Fields())
		var fe *record.FitError
		if (tc.field == "") != (err == nil) || (tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field)) {
			t.Errorf("%v: %v; want refused at %q", tc.fields, err, tc.field)
		}
	}
}
