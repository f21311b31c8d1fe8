package arrowflight

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbstream/zbstream"
)

// TestCheckSchema: CheckSchema takes what New takes and refuses what New
// refuses, with the same *zbstream.ConfigError naming the field.
func TestCheckSchema(t *testing.T) {
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	for _, tc := range []struct {
		name   string
		schema *arrow.Schema
		want   string // "" when taken
	}{
		{"plain", arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), ""},
		{"nested", arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64}))}}, nil), ""},
		{"nil", nil, "is nil"},
		{"dictionary", arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "cat", Type: dict}}, nil), `"cat" is dictionary-encoded`},
		{"nested dictionary", arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "cat", Type: dict})}}, nil), `"s.cat" is dictionary-encoded`},
	} {
		err := CheckSchema(tc.schema)
		_, newErr := newEncoder(tc.schema, CompressionNone, MaxFrameBytes)
		if tc.want == "" {
			if err != nil || newErr != nil {
				t.Errorf("%s: CheckSchema %v, newEncoder %v; want both nil", tc.name, err, newErr)
			}
			continue
		}
		var ce *zbstream.ConfigError
		if !errors.As(err, &ce) || ce.Field != "schema" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckSchema %v; want a *zbstream.ConfigError of the schema saying %s", tc.name, err, tc.want)
		}
		if newErr == nil || newErr.Error() != err.Error() {
			t.Errorf("%s: newEncoder %v; want CheckSchema's %v", tc.name, newErr, err)
		}
	}
}
