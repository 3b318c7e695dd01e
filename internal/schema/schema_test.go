package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Types used by the golden tests.
type (
	Unit string

	Base struct {
		ID string `json:"id" description:"the record's id"`
	}

	// Tree is recursive through a slice of pointers.
	Tree struct {
		Name     string  `json:"name"`
		Children []*Tree `json:"children,omitempty"`
	}

	// List is recursive through a pointer and refers to Tree as well.
	List struct {
		Value int   `json:"value"`
		Next  *List `json:"next"`
		Tree  *Tree `json:"tree,omitempty"`
	}

	Described struct {
		City string `json:"city"`
		Days int    `json:"days,omitempty" description:"the tag wins"`
	}

	Version struct{ Major, Minor int }

	Kinds struct {
		S    string            `json:"s"`
		I    int               `json:"i"`
		I8   int8              `json:"i8"`
		U16  uint16            `json:"u16"`
		U    uint              `json:"u"`
		F32  float32           `json:"f32"`
		F    float64           `json:"f"`
		B    bool              `json:"b"`
		Any  any               `json:"any"`
		Raw  json.RawMessage   `json:"raw"`
		Num  json.Number       `json:"num"`
		Data []byte            `json:"data"`
		When time.Time         `json:"when"`
		Wait time.Duration     `json:"wait"`
		Tags []string          `json:"tags"`
		Pair [2]float64        `json:"pair"`
		Map  map[string]int    `json:"map"`
		Ptr  *int              `json:"ptr"`
		Addr netip.Addr        `json:"addr"`
		Ver  Version           `json:"ver"`
		Unit Unit              `json:"unit"`
		Nest map[string][]bool `json:"nest"`
	}

	Tagged struct {
		Query    string            `json:"query" description:"what to look for" minLength:"1" maxLength:"200" examples:"go generics,slog"`
		Limit    int               `json:"limit" default:"10" minimum:"1" maximum:"100"`
		Ratio    float64           `json:"ratio,omitempty" exclusiveMinimum:"0" exclusiveMaximum:"1" multipleOf:"0.25"`
		Mode     string            `json:"mode,omitempty" enum:"fast,slow" default:"fast" title:"Mode"`
		Code     string            `json:"code,omitempty" pattern:"^[A-Z]{3}$" format:"uuid" deprecated:"true"`
		IDs      []int             `json:"ids,omitempty" minItems:"1" maxItems:"5" uniqueItems:"true"`
		Labels   []string          `json:"labels,omitempty" default:"[\"a\",\"b\"]"`
		Props    map[string]string `json:"props,omitempty" minProperties:"1" maxProperties:"3"`
		Quoted   int               `json:"quoted,string,omitempty"`
		Flag     bool              `json:"flag,string,omitempty"`
		Commas   string            `json:"commas,omitempty" enum:"[\"a,b\",\"c\"]"`
		Compat   string            `json:"compat,omitempty" jsonschema:"go-sdk style description"`
		Skipped  string            `json:"-"`
		Dash     string            `json:"-,"`
		untagged string
		Untagged string
	}

	Embedding struct {
		Base
		*Extra
		Name string `json:"name"`
	}

	Extra struct {
		Note string `json:"note,omitempty"`
	}

	// DescribedEmbedding promotes the fields of Described, whose own
	// FieldDescriptions describe them.
	DescribedEmbedding struct {
		Described
		Nights int `json:"nights"`
	}

	Shadow struct {
		Base
		ID int `json:"id"` // shallower: wins over Base.ID
	}

	Output struct {
		Names []string          `json:"names"`
		Attrs map[string]string `json:"attrs,omitempty"`
		Count int               `json:"count"`
		When  time.Time         `json:"when"`
	}
)

func (Unit) Enum() []any { return []any{Unit("celsius"), Unit("fahrenheit")} }

func (Described) FieldDescriptions() map[string]string {
	return map[string]string{"": "Where and how long to stay.", "City": "the city", "Days": "from the doc"}
}

func (*Version) UnmarshalText(b []byte) error {
	_, err := fmt.Sscanf(string(b), "%d.%d", new(int), new(int))
	return err
}

func (Version) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type":"string","pattern":"^[0-9]+\\.[0-9]+$"}`)
}

func TestSchemaGolden(t *testing.T) {
	for _, tt := range []struct {
		name   string
		typ    reflect.Type
		output bool
	}{
		{"kinds", reflect.TypeFor[Kinds](), false},
		{"tagged", reflect.TypeFor[Tagged](), false},
		{"tree", reflect.TypeFor[Tree](), false},
		{"list", reflect.TypeFor[List](), false},
		{"described", reflect.TypeFor[Described](), false},
		{"shadow", reflect.TypeFor[Shadow](), false},
		{"embedding", reflect.TypeFor[Embedding](), false},
		{"described_embedding", reflect.TypeFor[DescribedEmbedding](), false},
		{"pointer_root", reflect.TypeFor[*Tagged](), false},
		{"map_root", reflect.TypeFor[map[string]float64](), false},
		{"output", reflect.TypeFor[Output](), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := For(tt.typ, tt.output)
			if err != nil {
				t.Fatalf("For(%s) error: %v", tt.typ, err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, c.Schema(), "", "  "); err != nil {
				t.Fatalf("For(%s) schema is not valid JSON: %v\n%s", tt.typ, err, c.Schema())
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", tt.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("For(%s) schema differs from %s (run go test -update after checking):\ngot:\n%s", tt.typ, path, got.Bytes())
			}
		})
	}
}

// Types that New must refuse, each with the field path it must name.
type (
	badChan struct {
		C chan int `json:"c"`
	}
	badFunc struct {
		Inner struct {
			F func() `json:"f"`
		} `json:"inner"`
	}
	badComplex struct {
		Z []complex128 `json:"z"`
	}
	badMapKey struct {
		M map[int]string `json:"m"`
	}
	badIface struct {
		E error `json:"e"`
	}
	badPattern struct {
		S string `json:"s" pattern:"(("`
	}
	badDefault struct {
		N int `json:"n" default:"ten"`
	}
	badDefaultRange struct {
		N int `json:"n" default:"20" maximum:"10"`
	}
	badEnum struct {
		N int `json:"n" enum:"1,x"`
	}
	badMin struct {
		N int `json:"n" minimum:"abc"`
	}
	badRange struct {
		N int `json:"n" minimum:"5" maximum:"1"`
	}
	badJSONSchemaTag struct {
		S string `json:"s" jsonschema:"description=x"`
	}
)

// ambiguous embeds two structs that both have a field tagged "id" at the
// same depth: encoding/json binds neither, so For refuses the type. It is
// built at run time because vet rightly flags such a declaration.
var ambiguous = reflect.StructOf([]reflect.StructField{
	{Name: "Base", Type: reflect.TypeFor[Base](), Anonymous: true},
	{Name: "Other", Type: reflect.StructOf([]reflect.StructField{{Name: "ID", Type: reflect.TypeFor[string](), Tag: `json:"id"`}}), Anonymous: true},
})

func TestForErrors(t *testing.T) {
	for _, tt := range []struct {
		typ  reflect.Type
		want []string // substrings of the error
	}{
		{reflect.TypeFor[badChan](), []string{"C:", "channel"}},
		{reflect.TypeFor[badFunc](), []string{"Inner.F:", "function"}},
		{reflect.TypeFor[badComplex](), []string{"Z[]:", "complex"}},
		{reflect.TypeFor[badMapKey](), []string{"M:", "map keys must be strings"}},
		{reflect.TypeFor[badIface](), []string{"E:", "interface"}},
		{reflect.TypeFor[badPattern](), []string{"S:", "pattern"}},
		{reflect.TypeFor[badDefault](), []string{"N:", "default"}},
		{reflect.TypeFor[badDefaultRange](), []string{"N:", "default 20", "≤ 10"}},
		{reflect.TypeFor[badEnum](), []string{"N:", "enum value x"}},
		{reflect.TypeFor[badMin](), []string{"N:", "minimum"}},
		{reflect.TypeFor[badRange](), []string{"N:", "no value is allowed"}},
		{reflect.TypeFor[badJSONSchemaTag](), []string{"S:", "whole tag is the description"}},
		{ambiguous, []string{"ambiguous", "Base.ID", "Other.ID"}},
	} {
		t.Run(tt.typ.String(), func(t *testing.T) {
			_, err := For(tt.typ, false)
			if err == nil {
				t.Fatalf("For(%s) succeeded, want an error", tt.typ)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("For(%s) error = %q, want it to contain %q", tt.typ, err, w)
				}
			}
		})
	}
}
