package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// TestConstraintsNone holds none to every field of constraints: each one
// set in turn to a value newConstraints does not give makes none false,
// so a keyword added to constraints later cannot be dropped by the uses
// that share noConstraints.
func TestConstraintsNone(t *testing.T) {
	if c := newConstraints(); !c.none() {
		t.Fatal("newConstraints() is not none")
	}
	typ := reflect.TypeFor[constraints]()
	for i := range typ.NumField() {
		c := newConstraints()
		f := reflect.ValueOf(&c).Elem().Field(i)
		f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem() // unexported: set through its address
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(f.Int() + 2)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", typ.Field(i).Name, f.Kind())
		}
		if c.none() {
			t.Errorf("constraints with %s set is none", typ.Field(i).Name)
		}
	}
	if !noConstraints.none() {
		t.Error("noConstraints was modified")
	}
}

// TestManyStructTypes builds a struct of 40 struct types, each used
// twice, past the 32 that the builder finds by a scan before it makes a
// map: each type has one node whichever way it was found, and the schema
// and the decoder agree with the types.
func TestManyStructTypes(t *testing.T) {
	const n = 40
	var fields []reflect.StructField
	in := "{"
	for i := range n {
		inner := reflect.StructOf([]reflect.StructField{
			{Name: fmt.Sprintf("V%d", i), Type: reflect.TypeFor[int](), Tag: reflect.StructTag(fmt.Sprintf(`json:"v%d"`, i))},
		})
		fields = append(fields,
			reflect.StructField{Name: fmt.Sprintf("A%d", i), Type: inner, Tag: reflect.StructTag(fmt.Sprintf(`json:"a%d,omitempty"`, i))},
			reflect.StructField{Name: fmt.Sprintf("B%d", i), Type: reflect.PointerTo(inner), Tag: reflect.StructTag(fmt.Sprintf(`json:"b%d,omitempty"`, i))})
		if i > 0 {
			in += ","
		}
		in += fmt.Sprintf(`"a%d":{"v%d":%d},"b%d":{"v%d":%d}`, i, i, i, i, i, -i)
	}
	in += "}"
	typ := reflect.StructOf(fields)
	for _, output := range []bool{false, true} {
		b := &builder{opts: buildOptions{output: output}}
		if _, err := b.typeUse(typ, &noConstraints, ""); err != nil {
			t.Fatal(err)
		}
		if len(b.order) != n+1 {
			t.Errorf("output %v: %d struct nodes, want %d (one per type)", output, len(b.order), n+1)
		}
		if len(b.nodes) != n+1 {
			t.Errorf("output %v: the map holds %d nodes, want %d", output, len(b.nodes), n+1)
		}
	}
	c, err := For(typ, false)
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.New(typ).Elem()
	vs, err := c.Decode([]byte(in), v, 100)
	if err != nil || len(vs) != 0 {
		t.Fatalf("decode: %v %v", vs, err)
	}
	for i := range n {
		if a, b := v.Field(2*i).Field(0).Int(), v.Field(2*i+1).Elem().Field(0).Int(); a != int64(i) || b != int64(-i) {
			t.Errorf("a%d, b%d = %d, %d, want %d, %d", i, i, a, b, i, -i)
		}
	}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(c.Schema(), &doc); err != nil || len(doc.Properties) != 2*n {
		t.Errorf("the schema has %d properties, want %d (%v)", len(doc.Properties), 2*n, err)
	}
	if _, err := For(typ, true); err != nil {
		t.Fatal(err)
	}
}

// TestJSONTag holds jsonTag to reflect.StructTag.Get("json") on the tags
// it reads itself and on those it hands on, and on random tags made of
// the bytes that matter to either parse.
func TestJSONTag(t *testing.T) {
	tags := []reflect.StructTag{
		``, `json:"a"`, `json:"a,omitempty" pattern:"^[A-Z]{3}$"`, `json:""`, `json:"-"`, `json:"-,"`,
		`json:"a\"b"`, `json:"a\\b"`, `json:"é"`, "json:\"a\nb\"", "json:\"a\x7fb\"", `json:"a`, `json:`,
		`xjson:"a" json:"b"`, ` json:"a"`, `description:"x" json:"b"`, `json:"a"json:"b"`, `json:"a" json:"b"`,
		`json :"a"`, `json:'a'`, "json:\"a\tb\"",
	}
	alphabet := []byte("json:\" \\a,-é\n\x7f'")
	for i := range 2000 {
		b := []byte(`json:"`)
		if i%3 == 0 {
			b = b[:0]
		}
		for range i % 12 {
			b = append(b, alphabet[(i*7+len(b)*13)%len(alphabet)])
		}
		tags = append(tags, reflect.StructTag(b))
	}
	for _, tag := range tags {
		if got, want := jsonTag(tag), tag.Get("json"); got != want {
			t.Errorf("jsonTag(%q) = %q, Get gives %q", tag, got, want)
		}
	}
}
