package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/jsonschema"
	"github.com/miniopenclaw/tool/internal/jsontext"
)

// A Codec is the schema of a Go type together with the decoder compiled
// from it. It is immutable and safe for concurrent use.
type Codec struct {
	typ    reflect.Type
	root   *use
	schema []byte

	defaultBytes int
	output       bool // built to describe what is marshalled: a schema only, no decoder
}

// For derives the Codec of t. With output set, it describes what
// encoding/json marshals from t (nil slices and maps as null, every
// field without omitempty present) rather than what the decoder accepts,
// and is a schema only: its Decode returns an error.
func For(t reflect.Type, output bool) (*Codec, error) {
	b := &builder{opts: buildOptions{output: output}}
	root, err := b.typeUse(t, &noConstraints, "")
	if err != nil {
		return nil, err
	}
	rootNode := root.n
	for rootNode.kind == kPointer {
		rootNode = rootNode.elem.n
	}
	var defs []*node
	taken := map[string]bool{}
	for _, n := range b.order {
		if !n.recursive {
			continue
		}
		if n == rootNode {
			n.ref = "#"
			continue
		}
		name := n.typ.Name()
		if name == "" {
			name = "T"
		}
		unique := name
		for k := 2; taken[unique]; k++ {
			unique = name + strconv.Itoa(k)
		}
		taken[unique] = true
		n.ref = "#/$defs/" + unique
		defs = append(defs, n)
	}
	for _, p := range b.pending {
		if err := compileUse(p.u); err != nil {
			return nil, errorf(p.path, "%v", err)
		}
	}
	defaultBytes := 0
	for _, p := range b.defaults {
		dv, err := compileDefault(p.f)
		if err != nil {
			return nil, errorf(p.path, "%v", err)
		}
		p.f.def = dv
		defaultBytes += len(dv.raw)
	}
	r := &renderer{root: rootNode, output: output}
	r.b.Grow(schemaSizeHint(b.order, output))
	return &Codec{typ: t, root: root, schema: r.document(root, defs), defaultBytes: defaultBytes, output: output}, nil
}

// schemaSizeHint guesses the length of the schema of the struct nodes
// found, so that rendering grows its buffer once rather than doubling it
// from 64 bytes (five copies for a struct of eight fields). A guess that
// is short only costs those copies again.
func schemaSizeHint(order []*node, output bool) int {
	perField := 44 // "name":{"type":"string",...} and "name" in required
	if output {
		perField = 24 // fewer keywords: no defaults, patterns or bounds as a rule
	}
	n := 64
	for _, s := range order {
		n += 32 + len(s.doc)
		for _, f := range s.fields {
			n += 2*len(f.name) + perField + len(f.u.c.description)
		}
	}
	return n
}

// DefaultBytes returns the total length of the JSON of the defaults of the
// type's fields, each counted once. A default of a field of a slice's
// element type may be applied once per element; DecodeWithin bounds that.
func (c *Codec) DefaultBytes() int { return c.defaultBytes }

// Schema returns the JSON Schema of the type. The caller must not modify it.
func (c *Codec) Schema() []byte { return c.schema }

// IsObject reports whether the schema describes JSON objects only (the
// type is a struct, a map with string keys, or a pointer to one, and the
// schema does not allow null at the root).
func (c *Codec) IsObject() bool {
	n := c.root.n
	for n.kind == kPointer {
		n = n.elem.n
	}
	return n.kind == kStruct || n.kind == kMap
}

// Decode parses data strictly and binds it into v, which must be an
// addressable value of the Codec's type. It returns the violations found
// (v must then not be used), or a *jsontext.SyntaxError when data is not
// valid JSON, is nested deeper than maxDepth, or has trailing data.
// Blank data counts as {}.
func (c *Codec) Decode(data []byte, v reflect.Value, maxDepth int) ([]Violation, error) {
	return c.DecodeWithin(data, v, maxDepth, 0)
}

// DecodeWithin is Decode that also bounds the defaults it applies: when
// maxBytes > 0 and the length of data plus that of the JSON of the
// defaults applied would pass maxBytes, it returns a violation saying so.
func (c *Codec) DecodeWithin(data []byte, v reflect.Value, maxDepth, maxBytes int) ([]Violation, error) {
	if c.output {
		return nil, errors.New("schema: a Codec built with output set describes output and has no decoder")
	}
	i := jsontext.SkipSpace(data, 0)
	if i == len(data) {
		data, i = []byte("{}"), 0
	}
	d := decoder{data: data, maxDepth: maxDepth, maxBytes: maxBytes}
	if c.IsObject() && data[i] != '{' {
		end, err := jsontext.SkipValue(data, i, 0, maxDepth)
		if err != nil {
			if len(data) >= 3 && data[0] == 0xef && data[1] == 0xbb && data[2] == 0xbf {
				return []Violation{{Expected: "a JSON object", Got: "a byte order mark (U+FEFF) before the value"}}, nil
			}
			return nil, err
		}
		return []Violation{{Expected: "a JSON object", Got: describe(data[i:end])}}, nil
	}
	end, err := d.decode(i, c.root, v, 0)
	if err != nil {
		return nil, err
	}
	if end = jsontext.SkipSpace(data, end); end != len(data) {
		return nil, jsontext.Unexpected(data, end, "the end of the input after the JSON value")
	}
	if d.defaultsOver && len(d.viol) < MaxViolations {
		d.viol = append(d.viol, Violation{
			Expected: fmt.Sprintf("arguments that fit in %d bytes once the defaults are added", maxBytes),
			Got:      "arguments that would grow past that with the defaults of the properties they leave out",
			Hint:     "send fewer items, or give those properties values of your own",
		})
	}
	if d.dropped > 0 {
		more := fmt.Sprintf("%d more problems", d.dropped)
		if d.dropped == 1 {
			more = "1 more problem"
		}
		d.viol = append(d.viol, Violation{
			Expected: fmt.Sprintf("at most %d problems listed", MaxViolations),
			Got:      more,
			Hint:     "fix the ones listed and try again",
		})
	}
	for i := range d.viol {
		d.viol[i].cap()
	}
	return d.viol, nil
}

// enumValue is a decoded scalar to look up in an enumSet.
type enumValue struct {
	f      float64
	b      bool
	isBool bool
}

// enumSet is a compiled enum.
type enumSet struct {
	raw   []json.RawMessage
	strs  []string
	nums  []float64
	bools []bool
}

func (e *enumSet) has(v enumValue) bool {
	if v.isBool {
		for _, b := range e.bools {
			if b == v.b {
				return true
			}
		}
		return false
	}
	for _, f := range e.nums {
		if f == v.f {
			return true
		}
	}
	return false
}

// plainString returns the string raw holds when raw is a JSON string
// without escapes, as most enum values are, sparing a full decode.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// compileUse compiles the enum and checks the examples of u.
func compileUse(u *use) error {
	items := u.c.enum
	if len(items) == 0 {
		items = u.n.enum
	}
	if len(items) > 0 {
		set := &enumSet{raw: make([]json.RawMessage, 0, len(items))}
		for _, raw := range items {
			raw = compact(raw)
			var x any
			if s, ok := plainString(raw); ok {
				x = s
			} else if err := json.Unmarshal(raw, &x); err != nil {
				return fmt.Errorf("enum value %s is not valid JSON", raw)
			}
			kind := u.n.kind
			if u.stringOpt {
				s, ok := x.(string)
				if !ok {
					return fmt.Errorf("enum value %s: a ,string field takes string values", raw)
				}
				set.strs = append(set.strs, s)
				if kind == kBool {
					b, err := strconv.ParseBool(s)
					if err != nil || (s != "true" && s != "false") {
						return fmt.Errorf("enum value %s is not \"true\" or \"false\"", raw)
					}
					set.bools = append(set.bools, b)
				} else {
					f, err := strconv.ParseFloat(s, 64)
					if err != nil {
						return fmt.Errorf("enum value %s does not hold a number", raw)
					}
					set.nums = append(set.nums, f)
				}
				set.raw = append(set.raw, raw)
				continue
			}
			switch kind {
			case kString:
				s, ok := x.(string)
				if !ok {
					return fmt.Errorf("enum value %s is not a string", raw)
				}
				if set.strs == nil {
					set.strs = make([]string, 0, len(items))
				}
				set.strs = append(set.strs, s)
			case kInt, kUint, kFloat, kNumber:
				f, ok := x.(float64)
				if !ok || (kind == kInt || kind == kUint) && f != math.Trunc(f) {
					return fmt.Errorf("enum value %s is not %s", raw, expect(&use{n: u.n, c: &noConstraints}))
				}
				set.nums = append(set.nums, f)
			case kBool:
				b, ok := x.(bool)
				if !ok {
					return fmt.Errorf("enum value %s is not a boolean", raw)
				}
				set.bools = append(set.bools, b)
			default:
				return fmt.Errorf("enum is supported on strings, numbers and booleans only")
			}
			set.raw = append(set.raw, raw)
		}
		u.enumSet = set
	}
	for _, ex := range u.c.examples {
		if err := decodeConstant(u, ex); err != nil {
			return fmt.Errorf("example %s: %v", ex, err)
		}
	}
	if u.c.def != nil {
		u.c.def = compact(u.c.def)
	}
	return nil
}

// decodeConstant decodes a value written in a tag with the use's own
// decoder, so that it is held to the same rules as arguments.
func decodeConstant(u *use, raw []byte) error {
	v := reflect.New(typeOf(u)).Elem()
	d := decoder{data: raw, maxDepth: 64}
	end, err := d.decode(0, u, v, 0)
	if err == nil && jsontext.SkipSpace(raw, end) != len(raw) {
		err = errors.New("trailing data")
	}
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if len(d.viol) > 0 {
		return fmt.Errorf("expected %s, got %s", d.viol[0].Expected, describe(raw))
	}
	return nil
}

func typeOf(u *use) reflect.Type { return u.n.typ }

// defValue is a compiled default.
type defValue struct {
	u      *use
	raw    []byte
	v      reflect.Value // the decoded default, for scalars
	scalar bool
}

// apply stores the default in v: a copy of the decoded value for scalars,
// a fresh decoding otherwise so that no two calls share memory.
func (dv *defValue) apply(v reflect.Value) {
	if dv.scalar {
		v.Set(dv.v)
		return
	}
	d := decoder{data: dv.raw, maxDepth: 64}
	_, _ = d.decode(0, dv.u, v, 0) // checked when compiled
}

func compileDefault(f *field) (*defValue, error) {
	inner := f.u
	for inner.n.kind == kPointer {
		inner = inner.n.elem
	}
	raw := inner.c.def
	if err := decodeConstant(f.u, raw); err != nil {
		return nil, fmt.Errorf("default %s: %v", raw, err)
	}
	dv := &defValue{u: f.u, raw: raw}
	switch f.u.n.kind {
	case kString, kBool, kInt, kUint, kFloat, kNumber:
		dv.scalar = true
		dv.v = reflect.New(f.u.n.typ).Elem()
		d := decoder{data: raw, maxDepth: 64}
		_, _ = d.decode(0, f.u, dv.v, 0)
	}
	return dv, nil
}

// customSchema validates values of a type against the schema its
// JSONSchema method supplies.
type customSchema struct{ s *jsonschema.Schema }

// The schema is case-sensitive (see jsonschema.Schema.CaseSensitive): a
// type that checks itself usually decodes with encoding/json, which binds
// "HOST" or "hoſt" to a field named host.
func compileCustom(raw []byte) (customChecker, error) {
	s, err := jsonschema.Compile(raw)
	if err != nil {
		return nil, err
	}
	return customSchema{s.CaseSensitive()}, nil
}

func (c customSchema) check(raw []byte, ptr string) []Violation {
	_, vs, err := c.s.Validate(raw, jsonschema.Limits{})
	if err != nil {
		return []Violation{{Pointer: ptr, Expected: "valid JSON", Got: err.Error()}}
	}
	out := make([]Violation, len(vs))
	for i, v := range vs {
		out[i] = Violation{Pointer: ptr + v.Pointer, Expected: v.Expected, Got: v.Got, Hint: v.Hint}
	}
	return out
}
