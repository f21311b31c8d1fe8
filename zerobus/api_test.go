package zerobus_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	zerobus "github.com/zbstream/zbstream/zerobus"
)

// The official Go SDK's exported API (v1.7.0), written down by hand from its
// source: every function and method with its signature as reflect prints
// it, every struct's fields in order with their types, the constants and
// the defaults. The test compares this package with it, so that a program
// written for the official SDK compiles and behaves the same after the
// import line changes. A comment names the release that added what came
// after v1.0.0. The Avro and Arrow APIs, behind build tags here, add their
// entries in avro_test.go and arrow_test.go.

var officialFuncs = map[string]any{
	"func(string, string) (*zerobus.ZerobusSdk, error)": zerobus.NewZerobusSdk,
	"func() *zerobus.StreamConfigurationOptions":        zerobus.DefaultStreamConfigurationOptions,
	// v1.3.0
	"func(string, string, ...zerobus.SdkOption) (*zerobus.ZerobusSdk, error)": zerobus.NewZerobusSdkWithOptions,
	"func(string) zerobus.SdkOption":                                          zerobus.WithApplicationName,
	// v1.7.0 (its default, on, is v1.7.0's)
	"func(bool) zerobus.SdkOption": zerobus.WithConnectionPerStream,
	// v1.7.0: the Unity Catalog schema helpers
	"func([]zerobus.UcColumn, string) (*descriptorpb.DescriptorProto, error)":           zerobus.DescriptorFromUcColumns,
	"func(*zerobus.UcTableSchema) (*descriptorpb.DescriptorProto, error)":               zerobus.DescriptorFromUcSchema,
	"func([]zerobus.UcColumn, string) (protoreflect.MessageDescriptor, []uint8, error)": zerobus.MessageDescriptorFromUcColumns,
	"func(*zerobus.UcTableSchema) (protoreflect.MessageDescriptor, []uint8, error)":     zerobus.MessageDescriptorFromUcSchema,
}

var officialMethods = map[reflect.Type]map[string]string{
	reflect.TypeFor[*zerobus.ZerobusSdk](): {
		"Free":                            "func(*zerobus.ZerobusSdk)",
		"CreateStream":                    "func(*zerobus.ZerobusSdk, zerobus.TableProperties, string, string, *zerobus.StreamConfigurationOptions) (*zerobus.ZerobusStream, error)",
		"CreateStreamWithHeadersProvider": "func(*zerobus.ZerobusSdk, zerobus.TableProperties, zerobus.HeadersProvider, *zerobus.StreamConfigurationOptions) (*zerobus.ZerobusStream, error)",
	},
	reflect.TypeFor[*zerobus.ZerobusStream](): {
		"IngestRecord":        "func(*zerobus.ZerobusStream, interface {}) (*zerobus.RecordAck, error)",
		"IngestRecordOffset":  "func(*zerobus.ZerobusStream, interface {}) (int64, error)",
		"IngestRecordsOffset": "func(*zerobus.ZerobusStream, []interface {}) (int64, error)",
		"WaitForOffset":       "func(*zerobus.ZerobusStream, int64) error",
		"GetUnackedRecords":   "func(*zerobus.ZerobusStream) ([]interface {}, error)",
		"Flush":               "func(*zerobus.ZerobusStream) error",
		"Close":               "func(*zerobus.ZerobusStream) error",
		// v1.2.0
		"IngestRecordNowait":  "func(*zerobus.ZerobusStream, interface {}) error",
		"IngestRecordsNowait": "func(*zerobus.ZerobusStream, []interface {}) error",
	},
	reflect.TypeFor[*zerobus.RecordAck](): {
		"Await":  "func(*zerobus.RecordAck) (int64, error)",
		"Offset": "func(*zerobus.RecordAck) (int64, error)",
	},
	reflect.TypeFor[*zerobus.ZerobusError](): {
		"Error":     "func(*zerobus.ZerobusError) string",
		"Retryable": "func(*zerobus.ZerobusError) bool",
	},
	reflect.TypeFor[zerobus.HeadersProvider](): {
		"GetHeaders": "func() (map[string]string, error)",
	},
	// v1.7.0
	reflect.TypeFor[*zerobus.UcColumn](): {
		"UnmarshalJSON": "func(*zerobus.UcColumn, []uint8) error",
	},
	reflect.TypeFor[*zerobus.SchemaError](): {
		"Error": "func(*zerobus.SchemaError) string",
	},
}

// extraMethods are this package's additions to the official method sets.
var extraMethods = map[reflect.Type][]string{
	reflect.TypeFor[*zerobus.ZerobusSdk]():    {"Client", "ClientWithHeadersProvider"},
	reflect.TypeFor[*zerobus.ZerobusStream](): {"Stream"},
	reflect.TypeFor[*zerobus.ZerobusError]():  {"Unwrap"},
}

type field struct{ name, typ string }

var officialFields = map[reflect.Type][]field{
	reflect.TypeFor[zerobus.StreamConfigurationOptions](): {
		{"MaxInflightRequests", "uint64"},
		{"Recovery", "bool"},
		{"RecoveryTimeoutMs", "uint64"},
		{"RecoveryBackoffMs", "uint64"},
		{"RecoveryRetries", "uint32"},
		{"ServerLackOfAckTimeoutMs", "uint64"},
		{"FlushTimeoutMs", "uint64"},
		{"RecordType", "zerobus.RecordType"},
		{"StreamPausedMaxWaitTimeMs", "*uint64"},
	},
	reflect.TypeFor[zerobus.TableProperties](): {
		{"TableName", "string"},
		{"DescriptorProto", "[]uint8"},
	},
	reflect.TypeFor[zerobus.ZerobusError](): {
		{"Message", "string"},
		{"IsRetryable", "bool"},
	},
	// v1.7.0 (their JSON tags are in uc_test.go)
	reflect.TypeFor[zerobus.UcColumn](): {
		{"Name", "string"},
		{"TypeName", "string"},
		{"TypeText", "string"},
		{"TypeJson", "string"},
		{"Nullable", "bool"},
		{"Position", "int32"},
	},
	reflect.TypeFor[zerobus.UcTableSchema](): {
		{"Name", "string"},
		{"CatalogName", "string"},
		{"SchemaName", "string"},
		{"Columns", "[]zerobus.UcColumn"},
	},
	reflect.TypeFor[zerobus.SchemaError](): {
		{"Kind", "string"},
		{"Field", "string"},
		{"Message", "string"},
	},
}

// officialNames is every exported package-level name of the official SDK.
var officialNames = []string{
	"DefaultStreamConfigurationOptions", "HeadersProvider", "NewZerobusSdk", "RecordAck",
	"RecordType", "RecordTypeJson", "RecordTypeProto", "RecordTypeUnspecified",
	"StreamConfigurationOptions", "TableProperties", "ZerobusError", "ZerobusSdk", "ZerobusStream",
	// v1.3.0
	"NewZerobusSdkWithOptions", "SdkOption", "WithApplicationName",
	// v1.7.0
	"WithConnectionPerStream",
	"UcColumn", "UcTableSchema", "SchemaError", "DescriptorFromUcColumns", "DescriptorFromUcSchema",
	"MessageDescriptorFromUcColumns", "MessageDescriptorFromUcSchema",
	// the official repository's Beta Avro support, in no release yet: the
	// record type is in its default build, the rest behind the avro build
	// tag (its calls are tested in avro_test.go, built with -tags avro)
	"RecordTypeAvro", "AvroRecord", "AvroTableProperties", "Union",
	// the Arrow Flight API (Beta in the official SDK, in its default
	// build; here behind the arrow build tag, tested in arrow_test.go with
	// -tags arrow)
	"ArrowStreamConfigurationOptions", "DefaultArrowStreamConfigurationOptions", "ZerobusArrowStream",
	"IPCCompressionType", "IPCCompressionDefault", "IPCCompressionNone", "IPCCompressionLZ4Frame", "IPCCompressionZstd",
	"RecoverySetting", "RecoveryEnabled", "RecoveryDisabled",
}

func TestOfficialFunctions(t *testing.T) {
	for want, f := range officialFuncs {
		if got := reflect.TypeOf(f).String(); got != want {
			t.Errorf("function %s, want %s", got, want)
		}
	}
}

func TestOfficialMethods(t *testing.T) {
	for typ, methods := range officialMethods {
		var names []string
		for i := range typ.NumMethod() {
			names = append(names, typ.Method(i).Name)
		}
		want := slices.Concat(extraMethods[typ])
		for name, sig := range methods {
			want = append(want, name)
			m, ok := typ.MethodByName(name)
			if !ok {
				t.Errorf("%s has no method %s", typ, name)
				continue
			}
			if got := m.Type.String(); got != sig {
				t.Errorf("%s.%s is %s, want %s", typ, name, got, sig)
			}
		}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("%s has methods %v, want the official ones and the listed extras %v", typ, names, want)
		}
	}
}

func TestOfficialFields(t *testing.T) {
	for typ, want := range officialFields {
		var got []field
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				got = append(got, field{f.Name, f.Type.String()})
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has fields %v, want %v", typ, got, want)
		}
	}
	if k := reflect.TypeFor[zerobus.RecordType]().Kind(); k != reflect.Int32 {
		t.Errorf("RecordType is %s, want int32", k)
	}
	// SdkOption is a func of a pointer to an unexported struct, as in the
	// official SDK (whose options struct is sdkOptions), so that only the
	// package's With functions make one.
	if o := reflect.TypeFor[zerobus.SdkOption](); o.Kind() != reflect.Func || o.NumIn() != 1 || o.NumOut() != 0 ||
		o.In(0).Kind() != reflect.Pointer || o.In(0).Elem().Kind() != reflect.Struct || o.In(0).Elem().Name() != "sdkOptions" {
		t.Errorf("SdkOption is %s, want func(*sdkOptions)", o)
	}
}

func TestOfficialConstantsAndDefaults(t *testing.T) {
	for _, c := range []struct {
		got  zerobus.RecordType
		want int32
	}{{zerobus.RecordTypeUnspecified, 0}, {zerobus.RecordTypeProto, 1}, {zerobus.RecordTypeJson, 2}, {zerobus.RecordTypeAvro, 4}} {
		if int32(c.got) != c.want {
			t.Errorf("record type constant %d, want %d", c.got, c.want)
		}
	}
	want := zerobus.StreamConfigurationOptions{
		MaxInflightRequests:       1_000_000,
		Recovery:                  true,
		RecoveryTimeoutMs:         15_000,
		RecoveryBackoffMs:         2_000,
		RecoveryRetries:           4,
		ServerLackOfAckTimeoutMs:  60_000,
		FlushTimeoutMs:            300_000,
		RecordType:                zerobus.RecordTypeProto,
		StreamPausedMaxWaitTimeMs: nil,
	}
	if got := zerobus.DefaultStreamConfigurationOptions(); !reflect.DeepEqual(*got, want) {
		t.Errorf("defaults %+v, want %+v", *got, want)
	}
	if a, b := zerobus.DefaultStreamConfigurationOptions(), zerobus.DefaultStreamConfigurationOptions(); a == b {
		t.Error("DefaultStreamConfigurationOptions returns a shared value")
	}
	for _, c := range []struct {
		err  *zerobus.ZerobusError
		want string
	}{
		{&zerobus.ZerobusError{Message: "m", IsRetryable: true}, "ZerobusError (retryable): m"},
		{&zerobus.ZerobusError{Message: "m"}, "ZerobusError: m"},
	} {
		if c.err.Error() != c.want || c.err.Retryable() != c.err.IsRetryable {
			t.Errorf("%#v: %q, retryable %v", c.err, c.err.Error(), c.err.Retryable())
		}
	}
}

// TestExportedNames: the package exports the official names and, besides
// them, nothing at package level.
func TestExportedNames(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names = append(names, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(officialNames))
	if !slices.Equal(names, want) {
		t.Errorf("exported names %v, want %v", names, want)
	}
}
