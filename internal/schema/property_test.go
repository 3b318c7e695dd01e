package schema_test

// The agreement property: a value that validates always binds
// into In, and a value that binds always validates. Types are generated at
// run time with reflect.StructOf, instances are generated from the types
// (valid ones and mutated ones), and three judges must agree on every
// instance: Codec.Decode (the typed decoder), internal/jsonschema (the
// generic validator, on Codec.Schema) and santhosh-tekuri/jsonschema v6 (an
// independent implementation, as an oracle). Disagreements are allowed only
// for the exceptions listed in the exceptions table below, each with its
// reason and the direction it may go; every other disagreement fails the
// test with the seed that reproduces it.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/jsonschema"
	"github.com/miniopenclaw/tool/internal/schema"
	oracle "github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	propSeed    = flag.Uint64("prop.seed", 20261129, "seed of TestAgreement (0: a fresh one, printed); fixed by default so CI is repeatable")
	propTypes   = flag.Int("prop.types", 0, "number of types TestAgreement generates (0: the default)")
	propVerbose = flag.Bool("prop.verbose", false, "log every disagreement an exception excuses")
)

// maxDepth is the nesting limit both judges are given.
const maxDepth = 64

// ---------------------------------------------------------------------------
// Entropy: random numbers for the property test, fuzz input for the fuzz
// targets. Both drive the same generators.

type entropy interface {
	intn(n int) int // in [0, n); n ≥ 1
}

type pcg struct{ r *rand.Rand }

func (p pcg) intn(n int) int { return p.r.IntN(n) }

// byteSource reads choices from fuzz input; once the input is used up
// every choice is 0, so every input decodes to a finite type.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	v := 0
	for span := 1; span < n; span <<= 8 {
		v <<= 8
		if s.i < len(s.b) {
			v |= int(s.b[s.i])
			s.i++
		}
	}
	return v % n
}

func chance(e entropy, percent int) bool { return e.intn(100) < percent }

func pick[T any](e entropy, xs ...T) T { return xs[e.intn(len(xs))] }

// ---------------------------------------------------------------------------
// Shapes: a description of a generated Go type and of the keywords its tags
// set, from which valid and invalid instances are written.

type gkind int

const (
	gString gkind = iota
	gBool
	gInt
	gUint
	gFloat
	gNumber // json.Number
	gBytes  // []byte
	gTime   // time.Time
	gAny
	gSlice
	gArray
	gMap
	gPtr
	gStruct
	gRaw     // json.RawMessage
	gAddr    // netip.Addr: UnmarshalText, no schema hook
	gColor   // a string type with an Enum method
	gCelsius // a float type with UnmarshalJSON and a JSONSchema method
)

// Color is a named string type that lists its values through Enum.
type Color string

// Enum lists the values of Color.
func (Color) Enum() []any { return []any{"red", "green", "blue"} }

// Celsius decodes itself and states what it accepts through JSONSchema.
type Celsius float64

// JSONSchema states the values UnmarshalJSON accepts.
func (Celsius) JSONSchema() json.RawMessage {
	return json.RawMessage(`{"type":"number","minimum":-273.15}`)
}

// UnmarshalJSON accepts numbers at or above absolute zero.
func (c *Celsius) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	if f < -273.15 {
		return fmt.Errorf("%v is below absolute zero", f)
	}
	*c = Celsius(f)
	return nil
}

type shape struct {
	k      gkind
	t      reflect.Type
	bits   int
	elem   *shape
	n      int // array length
	fields []*fshape
}

// fshape is one JSON property of a generated struct.
type fshape struct {
	name     string
	sh       *shape
	str      bool   // the ,string option applies (number or boolean inside)
	omit     string // "omitempty", "omitzero" or ""
	strTag   bool   // the tag has ,string, whether or not it applies
	minTag   bool   // a minimum tag was written, whether or not it applies
	misfit   bool   // a keyword tag was written that does not apply to the kind
	c        cons
	required bool
}

// cons are the keywords a field's tags set, on the value inside any
// pointers.
type cons struct {
	lo, hi     *float64
	xlo, xhi   bool
	mult       string // multipleOf as written, "" when unset
	minLen     int    // -1: unset
	maxLen     int
	pat        *safePattern
	format     string
	enum       []string // JSON texts, in the schema's representation
	minItems   int
	maxItems   int
	unique     bool
	minProps   int
	maxProps   int
	hasDefault bool
}

func noCons() cons {
	return cons{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
}

// safePattern is a pattern from a small set whose valid strings we can
// write: RE2 and ECMA-262 read them the same way.
type safePattern struct {
	src string
	gen func(e entropy) string
}

var safePatterns = []*safePattern{
	{`^[A-Z]{3}$`, func(e entropy) string { return randFrom(e, "ABCXYZ", 3, 3) }},
	{`^[a-z]+$`, func(e entropy) string { return randFrom(e, "abcxyz", 1, 5) }},
	{`^[0-9]{2,4}$`, func(e entropy) string { return randFrom(e, "0123456789", 2, 4) }},
	{`^a`, func(e entropy) string { return "a" + randFrom(e, "ab é", 0, 3) }},
	{`z$`, func(e entropy) string { return randFrom(e, "yz 日", 0, 3) + "z" }},
	{`^[a-z]+(-[a-z]+)*$`, func(e entropy) string {
		s := randFrom(e, "abc", 1, 3)
		for range e.intn(3) {
			s += "-" + randFrom(e, "xyz", 1, 2)
		}
		return s
	}},
	{`é`, func(e entropy) string { return randFrom(e, "ab", 0, 2) + "é" + randFrom(e, "日x", 0, 2) }},
	{`^\d+$`, func(e entropy) string { return randFrom(e, "0123456789", 1, 4) }},
	{`^.{2}$`, func(e entropy) string { return randFrom(e, "a日😀 é", 2, 2) }},
}

func randFrom(e entropy, alphabet string, lo, hi int) string {
	rs := []rune(alphabet)
	n := lo + e.intn(hi-lo+1)
	var b strings.Builder
	for range n {
		b.WriteRune(rs[e.intn(len(rs))])
	}
	return b.String()
}

// Formats asserted by both judges, with valid values to write.
var validFormats = map[string][]string{
	"date":      {"2026-12-24", "2000-02-29", "1999-01-01"},
	"date-time": {"2026-12-24T10:00:00Z", "2026-12-24T10:00:00.5+02:00", "1970-01-01T00:00:00-05:30"},
	"time":      {"10:00:00Z", "23:59:59.999+01:00"},
	"email":     {"a@example.com", "first.last@sub.example.org"},
	"uuid":      {"123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000"},
	"ipv4":      {"127.0.0.1", "192.168.0.254"},
	"ipv6":      {"::1", "2001:db8::8a2e:370:7334"},
	"uri":       {"https://example.com/a?b=c", "urn:isbn:0451450523"},
	"x-custom":  {"example.com", "any text: an unasserted format"},
}

var formatNames = []string{"date", "date-time", "time", "email", "uuid", "ipv4", "ipv6", "uri", "x-custom"}

// formatEdges are strings on which format checkers are known to differ
// (see exFormat).
var formatEdges = []string{
	"2026-12-24t10:00:00z", "2026-12-24T23:59:60Z", "2026-12-24T10:00:00+24:00",
	"2026-12-24T10:00:00,5Z", "2026-02-30", "0000-01-01T00:00:00Z", "10:00:00", "24:00:00Z",
	"23:59:60Z", "a@b", "a..b@example.com", "\"a b\"@example.com", "Name <a@example.com>",
	"a@[127.0.0.1]", "123E4567-E89B-12D3-A456-426614174000", "127.0.0.01", "::ffff:1.2.3.4",
	"fe80::1%eth0", "1.2.3.4", "http://a b", "mailto:x", "/relative", "https://example.com/é",
}

// Named types the generator uses where reflect.StructOf cannot make one:
// embedded structs and a recursive type.
type (
	// Embedded is embedded by value or by pointer; its JSON names start
	// with "emb_", which generated names never do.
	Embedded struct {
		A string `json:"emb_a"`
		B int    `json:"emb_b,omitempty" minimum:"0" maximum:"9"`
	}
	// Tree is recursive, so its schema goes through $ref.
	Tree struct {
		V    int     `json:"v" minimum:"-5" maximum:"5"`
		Kids []*Tree `json:"kids,omitempty" maxItems:"3"`
	}
)

var (
	embeddedShape = &shape{k: gStruct, t: reflect.TypeFor[Embedded]()}
	treeShape     = &shape{k: gStruct, t: reflect.TypeFor[Tree]()}
)

func init() {
	embeddedShape.fields = []*fshape{
		{name: "emb_a", sh: &shape{k: gString, t: reflect.TypeFor[string]()}, c: noCons(), required: true},
		{name: "emb_b", sh: &shape{k: gInt, t: reflect.TypeFor[int](), bits: 64}, c: withBounds(noCons(), 0, 9)},
	}
	treePtr := &shape{k: gPtr, t: reflect.TypeFor[*Tree](), elem: treeShape}
	kids := noCons()
	kids.maxItems = 3
	treeShape.fields = []*fshape{
		{name: "v", sh: &shape{k: gInt, t: reflect.TypeFor[int](), bits: 64}, c: withBounds(noCons(), -5, 5), required: true},
		{name: "kids", sh: &shape{k: gSlice, t: reflect.TypeFor[[]*Tree](), elem: treePtr}, c: kids},
	}
}

func withBounds(c cons, lo, hi float64) cons {
	c.lo, c.hi = &lo, &hi
	return c
}

// typeGen writes random struct types.
type typeGen struct {
	e      entropy
	budget int // fields left to write, so that types stay small
}

// genRoot returns the shape of a root type: mostly a struct, sometimes a
// pointer to one or a map.
func (g *typeGen) genRoot() *shape {
	g.budget = 4 + g.e.intn(20)
	switch g.e.intn(20) {
	case 0, 1:
		s := g.genStruct(0)
		return &shape{k: gPtr, t: reflect.PointerTo(s.t), elem: s}
	case 2:
		return treeShape // a recursive root: "$ref":"#"
	case 3, 4:
		el := g.genShape(1)
		return &shape{k: gMap, t: reflect.MapOf(reflect.TypeFor[string](), el.t), elem: el}
	}
	return g.genStruct(0)
}

var scalarTypes = []struct {
	k    gkind
	t    reflect.Type
	bits int
}{
	{gString, reflect.TypeFor[string](), 0},
	{gBool, reflect.TypeFor[bool](), 0},
	{gInt, reflect.TypeFor[int](), 64},
	{gInt, reflect.TypeFor[int8](), 8},
	{gInt, reflect.TypeFor[int16](), 16},
	{gInt, reflect.TypeFor[int32](), 32},
	{gInt, reflect.TypeFor[int64](), 64},
	{gUint, reflect.TypeFor[uint](), 64},
	{gUint, reflect.TypeFor[uint8](), 8},
	{gUint, reflect.TypeFor[uint16](), 16},
	{gUint, reflect.TypeFor[uint32](), 32},
	{gUint, reflect.TypeFor[uint64](), 64},
	{gFloat, reflect.TypeFor[float32](), 32},
	{gFloat, reflect.TypeFor[float64](), 64},
	{gNumber, reflect.TypeFor[json.Number](), 0},
	{gBytes, reflect.TypeFor[[]byte](), 0},
	{gTime, reflect.TypeFor[time.Time](), 0},
	{gAny, reflect.TypeFor[any](), 0},
	{gInt, reflect.TypeFor[time.Duration](), 64},
	{gRaw, reflect.TypeFor[json.RawMessage](), 0},
	{gAddr, reflect.TypeFor[netip.Addr](), 0},
	{gColor, reflect.TypeFor[Color](), 0},
	{gCelsius, reflect.TypeFor[Celsius](), 0},
}

func (g *typeGen) genShape(depth int) *shape {
	composite := depth < 3 && g.budget > 0
	r := g.e.intn(100)
	switch {
	case !composite || r < 55:
		st := scalarTypes[g.e.intn(len(scalarTypes))]
		return &shape{k: st.k, t: st.t, bits: st.bits}
	case r < 65:
		el := g.genShape(depth + 1)
		if el.t == reflect.TypeFor[uint8]() {
			return &shape{k: gBytes, t: reflect.TypeFor[[]byte]()} // encoding/json's rule
		}
		return &shape{k: gSlice, t: reflect.SliceOf(el.t), elem: el}
	case r < 70:
		el := g.genShape(depth + 1)
		n := g.e.intn(4)
		return &shape{k: gArray, t: reflect.ArrayOf(n, el.t), elem: el, n: n}
	case r < 78:
		el := g.genShape(depth + 1)
		return &shape{k: gMap, t: reflect.MapOf(reflect.TypeFor[string](), el.t), elem: el}
	case r < 88:
		el := g.genShape(depth + 1)
		if el.k == gPtr && chance(g.e, 70) {
			return el // mostly one level of pointers; sometimes **T
		}
		return &shape{k: gPtr, t: reflect.PointerTo(el.t), elem: el}
	case r < 96:
		return g.genStruct(depth + 1)
	}
	return treeShape
}

var fieldNames = []string{"a", "b", "name", "Name", "NAME", "x_y", "n1", "from", "to", "ünï", "with space", "q"}

func (g *typeGen) genStruct(depth int) *shape {
	var sfs []reflect.StructField
	var fs []*fshape
	used := map[string]bool{}
	n := g.e.intn(6)
	if depth == 0 {
		n++
	}
	for i := 0; i < n && g.budget > 0; i++ {
		g.budget--
		goName := "F" + strconv.Itoa(i)
		sf := reflect.StructField{Name: goName}
		if depth == 0 && chance(g.e, 8) {
			// An embedded struct, by value or by pointer.
			sf.Name, sf.Anonymous = "Embedded", true
			if used["emb_a"] {
				continue
			}
			sf.Type = embeddedShape.t
			if chance(g.e, 50) {
				sf.Type = reflect.PointerTo(embeddedShape.t)
			}
			used["emb_a"] = true
			sfs = append(sfs, sf)
			fs = append(fs, embeddedShape.fields...)
			continue
		}
		if chance(g.e, 4) {
			// Skipped fields may have any type, even one JSON cannot hold.
			sf.Type = reflect.TypeFor[chan int]()
			sf.Tag = `json:"-"`
			sfs = append(sfs, sf)
			continue
		}
		sh := g.genShape(depth)
		sf.Type = sh.t
		name := pick(g.e, fieldNames...)
		if chance(g.e, 10) || used[name] {
			name = goName // untagged: the Go name
		}
		if used[name] {
			continue
		}
		used[name] = true
		f := &fshape{name: name, sh: sh, c: noCons()}
		var opts []string
		omit := chance(g.e, 30)
		if omit {
			f.omit = pick(g.e, "omitempty", "omitzero")
			opts = append(opts, f.omit)
		}
		in := inner(sh)
		ptrPtr := sh.k == gPtr && sh.elem.k == gPtr
		if chance(g.e, 15) && (!selfDecoding(in) || ptrPtr || chance(g.e, 10)) {
			// For refuses ,string on strings and on types that decode
			// themselves; encoding/json and the decoder ignore it on **T.
			f.strTag = true
			opts = append(opts, "string")
			switch in.k {
			case gInt, gUint, gFloat, gBool:
				f.str = !ptrPtr
			}
		}
		var tags []string
		jsonName := name
		if name == goName && chance(g.e, 50) {
			jsonName = ""
		}
		if jsonName != "" || len(opts) > 0 {
			tags = append(tags, tagKV("json", jsonName+prefixed(",", strings.Join(opts, ","))))
		}
		tags = append(tags, g.constraints(f, in)...)
		sf.Tag = reflect.StructTag(strings.Join(tags, " "))
		f.required = !omit && sh.k != gPtr && !f.c.hasDefault
		sfs = append(sfs, sf)
		fs = append(fs, f)
	}
	if used["emb_a"] && chance(g.e, 30) {
		// A field at depth 0 named like a field of the embedded struct
		// shadows it, as encoding/json decides.
		st := scalarTypes[g.e.intn(len(scalarTypes))]
		sh := &shape{k: st.k, t: st.t, bits: st.bits}
		sfs = append(sfs, reflect.StructField{Name: "Shadow", Type: sh.t, Tag: `json:"emb_b,omitempty"`})
		fs = slices.DeleteFunc(fs, func(f *fshape) bool { return f.name == "emb_b" })
		fs = append(fs, &fshape{name: "emb_b", sh: sh, c: noCons(), omit: "omitempty"})
	}
	t := reflect.StructOf(sfs)
	return &shape{k: gStruct, t: t, fields: fs}
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func tagKV(k, v string) string { return k + ":" + strconv.Quote(v) }

func inner(sh *shape) *shape {
	for sh.k == gPtr {
		sh = sh.elem
	}
	return sh
}

// constraints picks keyword tags for a field whose value (inside any
// pointers) has shape in, records them in f.c and returns the tags.
func (g *typeGen) constraints(f *fshape, in *shape) []string {
	e := g.e
	c := &f.c
	var tags []string
	if chance(e, 10) {
		tags = append(tags, tagKV("description", pick(e, "a field", "quotes \" and ` inside", "日本語")))
	}
	if chance(e, 3) {
		// A keyword that does not apply to the kind: For refuses it (it
		// was ignored, so a pattern on a []string checked nothing).
		switch in.k {
		case gInt, gUint, gFloat, gNumber:
			tags = append(tags, pick(e, tagKV("minLength", "2"), tagKV("minItems", "1"), tagKV("pattern", "^x$")))
		case gString, gColor:
			tags = append(tags, pick(e, tagKV("minimum", "3"), tagKV("minItems", "1"), tagKV("maxProperties", "0")))
		case gSlice, gArray:
			tags = append(tags, pick(e, tagKV("minimum", "3"), tagKV("maxLength", "0"), tagKV("pattern", "^x$")))
		default:
			tags = append(tags, pick(e, tagKV("minimum", "3"), tagKV("maxLength", "0"), tagKV("maxItems", "0")))
		}
		f.minTag = strings.Contains(tags[len(tags)-1], "minimum")
		f.misfit = true
		return tags
	}
	if !chance(e, 60) {
		return tags
	}
	switch in.k {
	case gInt, gUint, gFloat, gNumber:
		if f.str && !chance(e, 5) {
			break // For refuses bounds on a ,string number
		}
		integer := in.k == gInt || in.k == gUint
		lo, hi := typeRange(in, -1000, 1000)
		num := func() float64 {
			x := lo + float64(e.intn(int(hi-lo)+1))
			if !integer && chance(e, 50) {
				x += float64(e.intn(4)) * 0.25
			}
			return x
		}
		if chance(e, 50) {
			v := num()
			c.lo, c.xlo = &v, chance(e, 25)
			tags = append(tags, tagKV(map[bool]string{false: "minimum", true: "exclusiveMinimum"}[c.xlo], fmtNum(v)))
		}
		if chance(e, 50) {
			v := num()
			if c.lo != nil && v <= *c.lo {
				v = min(*c.lo+float64(1+e.intn(50)), hi)
			}
			if c.lo != nil && v <= *c.lo {
				break // no room above the minimum
			}
			c.hi, c.xhi = &v, chance(e, 25)
			tags = append(tags, tagKV(map[bool]string{false: "maximum", true: "exclusiveMaximum"}[c.xhi], fmtNum(v)))
		}
		if chance(e, 25) {
			c.mult = pick(e, "1", "2", "3", "5", "0.5", "0.25", "0.1", "0.01")

			tags = append(tags, tagKV("multipleOf", c.mult))
		}
	case gString:
		switch e.intn(4) {
		case 0:
			c.minLen = e.intn(3)
			tags = append(tags, tagKV("minLength", strconv.Itoa(c.minLen)))
			if chance(e, 60) {
				c.maxLen = c.minLen + e.intn(6)
				tags = append(tags, tagKV("maxLength", strconv.Itoa(c.maxLen)))
			}
		case 1:
			c.pat = pick(e, safePatterns...)
			tags = append(tags, tagKV("pattern", c.pat.src))
		case 2:
			c.format = pick(e, formatNames...)
			tags = append(tags, tagKV("format", c.format))
		case 3:
			c.maxLen = 1 + e.intn(4)
			tags = append(tags, tagKV("maxLength", strconv.Itoa(c.maxLen)))
		}
	case gSlice, gArray:
		if in.k == gArray {
			// The array's length decides; For refuses item counts that
			// differ from it.
			if chance(e, 30) {
				c.minItems = pick(e, in.n, in.n, e.intn(4))
				tags = append(tags, tagKV("minItems", strconv.Itoa(c.minItems)))
			}
			if chance(e, 30) {
				c.maxItems = pick(e, in.n, in.n, e.intn(4))
				tags = append(tags, tagKV("maxItems", strconv.Itoa(c.maxItems)))
			}
			if chance(e, 30) {
				c.unique = true
				tags = append(tags, tagKV("uniqueItems", "true"))
			}
			break
		}
		if chance(e, 50) {
			c.minItems = e.intn(3)
			tags = append(tags, tagKV("minItems", strconv.Itoa(c.minItems)))
		}
		if chance(e, 50) {
			c.maxItems = max(c.minItems, 0) + e.intn(4)
			tags = append(tags, tagKV("maxItems", strconv.Itoa(c.maxItems)))
		}
		if chance(e, 30) {
			c.unique = true
			tags = append(tags, tagKV("uniqueItems", "true"))
		}
	case gMap:
		if chance(e, 50) {
			c.minProps = e.intn(3)
			tags = append(tags, tagKV("minProperties", strconv.Itoa(c.minProps)))
		}
		if chance(e, 50) {
			c.maxProps = max(c.minProps, 0) + e.intn(4)
			tags = append(tags, tagKV("maxProperties", strconv.Itoa(c.maxProps)))
		}
	}
	scalar := in.k == gString || in.k == gInt || in.k == gUint || in.k == gFloat || in.k == gBool || in.k == gNumber
	vg := &valueGen{e: e}
	vg.value(in, c, f.str, 0) // inside any pointer, which might just write null
	if vg.impossible {
		return tags
	}
	if scalar && chance(e, 30) {
		// An enum of values that meet the other keywords.
		var items []string
		seen := map[string]bool{}
		for range 1 + e.intn(4) {
			v := vg.scalar(in, c, f.str, false)
			if !seen[v] {
				seen[v] = true
				items = append(items, v)
			}
		}
		c.enum = items
		tags = append(tags, tagKV("enum", listTag(items, in.k == gString || f.str)))
	}
	if chance(e, 20) {
		// A default that meets the keywords; an optional field.
		v := vg.value(f.sh, c, f.str, 0)
		if v != "null" {
			c.hasDefault = true
			tags = append(tags, tagKV("default", rawTag(v, f.str || in.k == gString || in.k == gColor)))
		}
	}
	return tags
}

// uniqueOK reports whether items of shape sh that differ as written also
// differ once bound and marshalled again: not so for structs with optional
// fields ({"v":1} and {"v":1,"kids":[]}, or a default written out) or any
// values (1 and 1.0).
func uniqueOK(sh *shape, seen map[*shape]bool) bool {
	if seen[sh] {
		return true
	}
	seen[sh] = true
	switch sh.k {
	case gAny:
		return false
	case gPtr, gArray, gSlice, gMap:
		return uniqueOK(sh.elem, seen)
	case gStruct:
		for _, f := range sh.fields {
			if !f.required || !uniqueOK(f.sh, seen) {
				return false
			}
		}
	}
	return true
}

// listTag writes an enum tag: comma-separated when that is unambiguous,
// else a JSON array.
func listTag(items []string, stringKind bool) string {
	if stringKind {
		var plain []string
		for _, it := range items {
			var s string
			if json.Unmarshal([]byte(it), &s) != nil || strings.ContainsAny(s, ",[") || strings.TrimSpace(s) != s || s == "" {
				return "[" + strings.Join(items, ",") + "]"
			}
			plain = append(plain, s)
		}
		return strings.Join(plain, ",")
	}
	return strings.Join(items, ",")
}

// rawTag writes a default tag: the raw text for string kinds, JSON
// otherwise.
func rawTag(v string, stringKind bool) string {
	if stringKind {
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
	}
	return v
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ---------------------------------------------------------------------------
// Values.

// Exception classes an instance may carry (see the exceptions table).
type exClass uint32

const (
	exRange exClass = 1 << iota
	exStringRange
	exPrecision
	exFormat
	exTextHook
)

// valueGen writes JSON instances of a shape. With mutateAt > 0 the
// mutateAt-th value written is replaced by a mutation.
type valueGen struct {
	e        entropy
	mutateAt int
	count    int
	mutated  string // what the mutation did, for failure messages
	ex       exClass
	// hasFormat is set when a value with an asserted format was written:
	// text mutations may then break it in ways format checkers differ on.
	hasFormat bool
	// hasTime is set when a time.Time was written: text mutations may
	// then break it in ways the oracle's format checker differs on.
	hasTime bool
	// hasTextHook is set when a netip.Addr was written (see exTextHook).
	hasTextHook bool
	// maxDepth is the judges' nesting limit (0: maxDepth).
	maxDepth int
	// impossible is set when the keywords allow no value the generator
	// can write, so that no enum or default is made of an invalid one.
	impossible bool
}

func (g *valueGen) instance(sh *shape, mutate bool) string {
	g.count, g.mutated, g.ex, g.mutateAt, g.hasFormat, g.hasTextHook, g.hasTime = 0, "", 0, 0, false, false, false
	if mutate {
		g.mutateAt = 1 + g.e.intn(8)
	}
	v := g.value(sh, &cons{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}, false, 0)
	if mutate && g.mutated == "" {
		g.mutateAt = 0
		v = g.textMutation(v)
	}
	if mutate && contains(sh, gAddr, map[*shape]bool{}) {
		g.ex |= exTextHook // a mutation may have written any string where an address goes
	}
	return v
}

func (g *valueGen) value(sh *shape, c *cons, str bool, depth int) string {
	g.count++
	if g.mutateAt > 0 && g.count == g.mutateAt {
		g.mutateAt = -1
		return g.mutation(sh, c, str, depth)
	}
	e := g.e
	switch sh.k {
	case gPtr:
		if chance(e, 15) {
			return "null"
		}
		return g.value(sh.elem, c, str, depth)
	case gString, gBool, gInt, gUint, gFloat, gNumber:
		return g.scalar(sh, c, str, true)
	case gBytes:
		b := make([]byte, e.intn(8))
		for i := range b {
			b[i] = byte(e.intn(256))
		}
		return strconv.Quote(base64.StdEncoding.EncodeToString(b))
	case gTime:
		g.hasTime = true
		t := time.Date(1970+e.intn(130), time.Month(1+e.intn(12)), 1+e.intn(28), e.intn(24), e.intn(60), e.intn(60), e.intn(2)*500_000_000, time.FixedZone("", (e.intn(25)-12)*3600))
		return strconv.Quote(t.Format(time.RFC3339Nano))
	case gAny, gRaw:
		return g.anyValue(depth, 2)
	case gAddr:
		g.hasTextHook = true
		return jsonString(pick(e, "127.0.0.1", "::1", "192.168.0.254", "2001:db8::1", ""))
	case gColor:
		return pick(e, `"red"`, `"green"`, `"blue"`)
	case gCelsius:
		return pick(e, "-273.15", "0", "21.5", "1e3", "-273")
	case gSlice:
		lo, hi := 0, 3
		if c.minItems >= 0 {
			lo = c.minItems
		}
		if c.maxItems >= 0 {
			hi = c.maxItems
		} else if hi < lo {
			hi = lo + 2
		}
		n := lo + e.intn(hi-lo+1)
		if depth > 6 {
			n = lo
		}
		var items []string
		seen := map[string]bool{}
		for tries := 0; len(items) < n && tries < 4*n+4; tries++ {
			v := g.value(sh.elem, &cons{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}, false, depth+1)
			if c.unique {
				k := canonical(v)
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			items = append(items, v)
		}
		if len(items) < lo {
			g.impossible = true // not enough distinct items
		}
		return "[" + strings.Join(items, ",") + "]"
	case gArray:
		items := make([]string, sh.n)
		seen := map[string]bool{}
		for i := range items {
			for try := 0; try < 5; try++ {
				items[i] = g.value(sh.elem, &cons{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}, false, depth+1)
				if !c.unique || !seen[canonical(items[i])] {
					break
				}
			}
			if c.unique && seen[canonical(items[i])] {
				g.impossible = true // not enough distinct items
			}
			seen[canonical(items[i])] = true
		}
		return "[" + strings.Join(items, ",") + "]"
	case gMap:
		lo, hi := 0, 3
		if c.minProps >= 0 {
			lo = c.minProps
		}
		if c.maxProps >= 0 {
			hi = c.maxProps
		} else if hi < lo {
			hi = lo + 2
		}
		n := lo + e.intn(hi-lo+1)
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(fmt.Sprintf("k%d%s", i, randFrom(e, "aB日", 0, 2))))
			b.WriteByte(':')
			b.WriteString(g.value(sh.elem, &cons{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}, false, depth+1))
		}
		b.WriteByte('}')
		return b.String()
	case gStruct:
		var members []string
		for _, f := range sh.fields {
			if !f.required && (chance(e, 40) || depth > 6) {
				continue
			}
			members = append(members, jsonString(f.name)+":"+g.value(f.sh, &f.c, f.str, depth+1))
		}
		if chance(e, 30) {
			shuffle(e, members)
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	panic("unknown shape")
}

func shuffle[T any](e entropy, xs []T) {
	for i := len(xs) - 1; i > 0; i-- {
		j := e.intn(i + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// canonical returns a form of a JSON value in which equal values are
// equal strings (numbers compared as float64, which is enough for the
// values the generator writes).
func canonical(v string) string {
	var x any
	d := json.NewDecoder(strings.NewReader(v))
	if d.Decode(&x) != nil {
		return v
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// scalar writes a valid string, boolean or number for shape sh (inside
// pointers) under keywords c. str quotes numbers and booleans (,string).
func (g *valueGen) scalar(sh *shape, c *cons, str bool, useEnum bool) string {
	e := g.e
	if useEnum && len(c.enum) > 0 {
		return pick(e, c.enum...)
	}
	sh = inner(sh)
	quote := func(s string) string {
		if str {
			return strconv.Quote(s)
		}
		return s
	}
	switch sh.k {
	case gString:
		switch {
		case c.pat != nil:
			return jsonString(c.pat.gen(e))
		case c.format != "":
			g.hasFormat = true
			return jsonString(pick(e, validFormats[c.format]...))
		}
		lo, hi := 0, 6
		if c.minLen >= 0 {
			lo = c.minLen
		}
		if c.maxLen >= 0 {
			hi = c.maxLen
		}
		if hi < lo {
			hi = lo
		}
		return g.stringValue(lo + e.intn(hi-lo+1))
	case gBool:
		return quote(pick(e, "true", "false"))
	case gInt, gUint, gFloat, gNumber:
		return quote(g.number(sh, c, str))
	}
	panic("not a scalar")
}

// stringValue writes a JSON string of n code points with escapes of every
// kind.
func (g *valueGen) stringValue(n int) string {
	e := g.e
	var b strings.Builder
	b.WriteByte('"')
	for range n {
		switch e.intn(14) {
		case 0:
			b.WriteString(`\"`)
		case 1:
			b.WriteString(`\\`)
		case 2:
			b.WriteString(`\n`)
		case 3:
			b.WriteString(`\u00e9`)
		case 4:
			b.WriteString(`\ud83d\ude00`) // one code point, two UTF-16 units
		case 5:
			b.WriteString("日")
		case 6:
			b.WriteString("😀")
		case 7:
			b.WriteString(`\/`)
		case 8:
			b.WriteString(`\u0000`)
		default:
			b.WriteByte(byte('a' + e.intn(26)))
		}
	}
	b.WriteByte('"')
	return b.String()
}

// number writes a number meeting c within the range of sh's Go type.
func (g *valueGen) number(sh *shape, c *cons, str bool) string {
	e := g.e
	integer := sh.k == gInt || sh.k == gUint
	lo, hi := typeRange(sh, -1e4, 1e4)
	if c.lo != nil {
		lo = max(lo, *c.lo)
	}
	if c.hi != nil {
		hi = min(hi, *c.hi)
	}
	if hi < lo {
		hi = lo
	}
	// Candidates: multiples of the step (multipleOf, or 1 or 0.25) inside
	// [lo, hi], exclusive ends left out.
	step := 1.0
	if !integer && !str && chance(e, 50) {
		step = 0.25
	}
	mult := c.mult
	if mult != "" {
		m, _ := strconv.ParseFloat(mult, 64)
		if integer && m < 1 {
			m, mult = 1, "1" // every integer is a multiple of 0.5, 0.25, 0.1 and 0.01
		}
		step = m
	}
	kLo, kHi := math.Ceil(lo/step-1e-9), math.Floor(hi/step+1e-9)
	if c.xlo && kLo*step <= lo+1e-12 {
		kLo++
	}
	if c.xhi && kHi*step >= hi-1e-12 {
		kHi--
	}
	if kHi < kLo {
		g.impossible = true
		return "0" // no valid value near: the instance is simply invalid
	}
	span := kHi - kLo
	k := kLo + math.Floor(float64(e.intn(1000))/1000*(span+1))
	k = min(k, kHi)
	x := k * step
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if mult != "" {
		s = decimalTimes(int64(k), mult)
	}
	if integer && !str && chance(e, 10) && !strings.Contains(s, ".") {
		s = pick(e, s+".0", s+"e0", s+"0e-1")
		if strings.HasPrefix(s, "00") || strings.HasPrefix(s, "-00") {
			s = strings.Replace(s, "00e-1", "0e0", 1)
		}
	}
	if s == "-0" && str {
		s = "0"
	}
	return s
}

// typeRange intersects [lo, hi] with the range of sh's Go type.
func typeRange(sh *shape, lo, hi float64) (float64, float64) {
	switch sh.k {
	case gInt:
		if sh.bits < 64 {
			m := math.Ldexp(1, sh.bits-1)
			lo, hi = max(lo, -m), min(hi, m-1)
		}
	case gUint:
		lo = max(lo, 0)
		if sh.bits < 64 {
			hi = min(hi, math.Ldexp(1, sh.bits)-1)
		}
	}
	return lo, hi
}

// decimalTimes writes k × m exactly, for a decimal literal m.
func decimalTimes(k int64, m string) string {
	frac := 0
	if i := strings.IndexByte(m, '.'); i >= 0 {
		frac = len(m) - i - 1
		m = m[:i] + m[i+1:]
	}
	mi, _ := strconv.ParseInt(m, 10, 64)
	p := k * mi
	neg := p < 0
	if neg {
		p = -p
	}
	s := strconv.FormatInt(p, 10)
	if frac > 0 {
		for len(s) <= frac {
			s = "0" + s
		}
		s = s[:len(s)-frac] + "." + s[len(s)-frac:]
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if neg && s != "0" {
		s = "-" + s
	}
	return s
}

// anyValue writes an arbitrary JSON value.
func (g *valueGen) anyValue(depth, limit int) string {
	e := g.e
	r := e.intn(10)
	if depth >= limit && r >= 7 {
		r = e.intn(7)
	}
	switch r {
	case 0:
		return "null"
	case 1:
		return pick(e, "true", "false")
	case 2, 3:
		return pick(e, "0", "-1", "2.5", "1e3", "-0.125", "12345678")
	case 4, 5, 6:
		return g.stringValue(e.intn(5))
	case 7, 8:
		n := e.intn(3)
		items := make([]string, n)
		for i := range items {
			items[i] = g.anyValue(depth+1, limit)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	n := e.intn(3)
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`"m%d":%s`, i, g.anyValue(depth+1, limit))
	}
	return "{" + strings.Join(items, ",") + "}"
}

// mutation writes a value at a position of shape sh that is likely, but
// not certain, to be invalid, and records what it did.
func (g *valueGen) mutation(sh *shape, c *cons, str bool, depth int) string {
	e := g.e
	in := inner(sh)
	if in.k == gAddr {
		g.ex |= exTextHook
	}
	wrong := func() string {
		return pick(e, `"x"`, `""`, `1`, `-2.5`, `true`, `null`, `[]`, `{}`, `[1,"a"]`, `{"a":1}`, `"1"`, `"true"`)
	}
	var v string
	kind := "wrong type"
	switch r := e.intn(10); {
	case r < 3:
		v = wrong()
	default:
		switch in.k {
		case gInt, gUint, gFloat, gNumber:
			v, kind = g.numberMutation(in, c, str)
		case gBool:
			kind = "boolean"
			v = pick(e, `"True"`, `"1"`, `1`, `"true"`, `"false"`, `true`, `"yes"`)
		case gString:
			v, kind = g.stringMutation(c)
		case gBytes:
			kind = "base64"
			v = pick(e, `"abc"`, `"YQ"`, `"YQ=="`, `"YQ==\n"`, `"-_8="`, `"YWJj"`, `"YW Jj"`, `"=="`)
		case gTime:
			kind = "date-time"
			v = jsonString(pick(e, formatEdges[:10]...))
			g.ex |= exFormat // the oracle's date-time checker may differ
		case gSlice, gArray:
			v, kind = g.arrayMutation(in, c, depth)
		case gMap:
			v, kind = g.mapMutation(in, c, depth)
		case gStruct:
			v, kind = g.structMutation(in, depth)
		case gAddr:
			kind = "address"
			v = jsonString(pick(e, "999.1.1.1", "localhost", "1.2.3", "::g", " 127.0.0.1"))
		case gColor:
			kind = "named enum"
			v = pick(e, `"purple"`, `"RED"`, `""`, `"red "`)
		case gCelsius:
			kind = "hooked number"
			v = pick(e, "-273.16", "-300", `"21"`, "1e400", "-1e400")
			g.ex |= exRange // 1e400: the method's ParseFloat refuses it, the schema states no maximum
		case gAny, gRaw:
			kind = "deep"
			limit := g.maxDepth
			if limit == 0 {
				limit = maxDepth
			}
			n := limit - 2 - depth + e.intn(4)
			v = strings.Repeat("[", max(n, 0)) + strings.Repeat("]", max(n, 0))
		default:
			v = wrong()
		}
	}
	g.mutated = fmt.Sprintf("%s at value #%d: %s", kind, g.count, v)
	return v
}

func (g *valueGen) numberMutation(sh *shape, c *cons, str bool) (string, string) {
	e := g.e
	var cands []string
	add := func(f float64) { cands = append(cands, fmtNum(f)) }
	if c.lo != nil {
		add(*c.lo)
		add(*c.lo - 1)
		add(*c.lo - 0.5)
	}
	if c.hi != nil {
		add(*c.hi)
		add(*c.hi + 1)
		add(*c.hi + 0.25)
	}
	if c.mult != "" {
		m, _ := strconv.ParseFloat(c.mult, 64)
		add(m * 1.5)
		add(m*7 + m/3)
		cands = append(cands, "1000000.0001", "0.30000000000000004")
	}
	if len(c.enum) > 0 {
		for _, en := range c.enum {
			en = strings.Trim(en, `"`)
			cands = append(cands, en+".0", en+"e0", en+"1")
		}
	}
	switch sh.k {
	case gInt, gUint:
		if sh.bits < 64 {
			m := math.Ldexp(1, sh.bits-1)
			if sh.k == gUint {
				m *= 2
			}
			add(m)
			add(m - 1)
			if sh.k == gInt {
				add(-m)
				add(-m - 1)
			}
		}
		cands = append(cands, "-1", "-0", "2.5", "1e2", "3.0", "-0.0", "1E1")
	}
	precise := []string{"1.0000000000000000001", "9007199254740993", "0.1000000000000000000001", "1e-400", "4.9e-324"}
	huge := []string{"1e400", "-1e400", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616", "1e19", "3.4028236e38", "3.5e38", "-3.5e38"}
	if len(cands) == 0 || chance(e, 20) {
		if chance(e, 50) {
			cands = append(cands, precise...)
		} else {
			cands = append(cands, huge...)
		}
	}
	v := pick(e, cands...)
	g.classifyNumber(sh, c, str, v)
	if str {
		if chance(e, 15) {
			return v, "unquoted number"
		}
		if chance(e, 20) {
			return pick(e, `"01"`, `" 1"`, `"+1"`, `""`, `"0x10"`, `"1_000"`, `"NaN"`, `"Infinity"`, `"-"`), "bad number text"
		}
		return strconv.Quote(v), "quoted number"
	}
	return v, "number"
}

// classifyNumber records the exception classes a number literal written
// into a field of shape sh may fall under.
func (g *valueGen) classifyNumber(sh *shape, c *cons, str bool, lit string) {
	if significantDigits(lit) > 15 || extremeExponent(lit, sh) {
		g.ex |= exPrecision
	}
	f, err := strconv.ParseFloat(lit, 64)
	outside := err != nil // beyond float64
	switch sh.k {
	case gInt:
		if sh.bits == 64 {
			outside = outside || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18
		} else if str {
			m := math.Ldexp(1, sh.bits-1)
			outside = outside || f >= m || f < -m
		}
	case gUint:
		if sh.bits == 64 {
			outside = outside || f >= 1.8446744073709551615e19
		} else if str {
			outside = outside || f >= math.Ldexp(1, sh.bits) || f < 0
		}
	case gFloat:
		if sh.bits == 32 {
			_, err32 := strconv.ParseFloat(lit, 32)
			outside = outside || err32 != nil || math.Abs(f) > math.MaxFloat32
		}
	}
	switch {
	case outside && str:
		g.ex |= exStringRange
	case outside:
		g.ex |= exRange
	}
}

func significantDigits(lit string) int {
	mant := lit
	if i := strings.IndexAny(mant, "eE"); i >= 0 {
		mant = mant[:i]
	}
	mant = strings.TrimLeft(strings.Replace(strings.TrimPrefix(mant, "-"), ".", "", 1), "0")
	return len(strings.TrimRight(mant, "0"))
}

func extremeExponent(lit string, sh *shape) bool {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false // range, not precision
	}
	if f != 0 && (math.Abs(f) < 1e-300 || math.Abs(f) > 1e300) {
		return true
	}
	if sh.k == gFloat && sh.bits == 32 && f != 0 && (math.Abs(f) < 1e-37 || math.Abs(f) > 3.4e38) {
		return true
	}
	return f == 0 && strings.ContainsAny(strings.TrimLeft(lit, "-0."), "123456789")
}

func (g *valueGen) stringMutation(c *cons) (string, string) {
	e := g.e
	switch {
	case len(c.enum) > 0 && chance(e, 60):
		var s string
		_ = json.Unmarshal([]byte(pick(e, c.enum...)), &s)
		return jsonString(pick(e, strings.ToUpper(s), s+"x", " "+s, strings.ToLower(s)+"\u200b")), "enum near-miss"
	case c.format != "" && c.format != "x-custom":
		g.ex |= exFormat
		return jsonString(pick(e, formatEdges...)), "format edge"
	case c.pat != nil:
		return g.stringValue(e.intn(4)), "pattern"
	case c.minLen >= 0 || c.maxLen >= 0:
		n := max(c.minLen-1, 0)
		if c.maxLen >= 0 && chance(e, 50) {
			n = c.maxLen + 1
		}
		return g.stringValue(n), "length"
	}
	return pick(e, `"\ud800"`, `"\udc00x"`, "\"\xff\"", "\"a\x01\"", `"\x"`, `"\u12"`), "bad string"
}

func (g *valueGen) arrayMutation(sh *shape, c *cons, depth int) (string, string) {
	e := g.e
	one := func() string {
		return g.value(sh.elem, &cons{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}, false, depth+1)
	}
	switch e.intn(4) {
	case 0:
		n := 0
		if sh.k == gArray {
			n = sh.n + pick(e, -1, 1)
		} else if c.maxItems >= 0 {
			n = c.maxItems + 1
		} else if c.minItems > 0 {
			n = c.minItems - 1
		}
		items := make([]string, max(n, 0))
		for i := range items {
			items[i] = one()
		}
		return "[" + strings.Join(items, ",") + "]", "item count"
	case 1:
		x := one()
		items := []string{x, x}
		if inner(sh.elem).k == gInt || inner(sh.elem).k == gFloat {
			if _, err := strconv.ParseFloat(x, 64); err == nil && !strings.ContainsAny(x, ".eE") {
				items[1] = x + ".0" // equal as numbers
			}
		}
		for len(items) < c.minItems {
			items = append(items, one())
		}
		return "[" + strings.Join(items, ",") + "]", "duplicate items"
	case 2:
		return "[" + one() + ",]", "trailing comma"
	}
	return "[" + one() + "," + pick(e, `null`, `"s"`, `{}`, `1.5`) + "]", "bad item"
}

func (g *valueGen) mapMutation(sh *shape, c *cons, depth int) (string, string) {
	e := g.e
	one := func() string {
		return g.value(sh.elem, &cons{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}, false, depth+1)
	}
	switch e.intn(3) {
	case 0:
		return `{"k":` + one() + `,"k":` + one() + `}`, "duplicate map key"
	case 1:
		return `{"k":` + one() + `,"\u006b":` + one() + `}`, "duplicate escaped map key"
	}
	n := 0
	if c.maxProps >= 0 {
		n = c.maxProps + 1
	} else if c.minProps > 0 {
		n = c.minProps - 1
	}
	var ms []string
	for i := range n {
		ms = append(ms, fmt.Sprintf(`"p%d":%s`, i, one()))
	}
	return "{" + strings.Join(ms, ",") + "}", "property count"
}

func (g *valueGen) structMutation(sh *shape, depth int) (string, string) {
	e := g.e
	var ms []string
	var names []string
	for _, f := range sh.fields {
		ms = append(ms, jsonString(f.name)+":"+g.value(f.sh, &f.c, f.str, depth+1))
		names = append(names, f.name)
	}
	what := ""
	switch e.intn(6) {
	case 0:
		if len(ms) > 0 {
			k := e.intn(len(ms))
			ms = slices.Delete(ms, k, k+1)
			what = "missing " + names[k]
			break
		}
		fallthrough
	case 1:
		ms = append(ms, pick(e, `"extra":1`, `"":null`, `"emb_c":true`, `"Embedded":{}`))
		what = "extra property"
	case 2:
		if len(ms) > 0 {
			ms = append(ms, ms[e.intn(len(ms))])
			what = "duplicate key"
			break
		}
		fallthrough
	case 3:
		if len(names) > 0 {
			k := e.intn(len(names))
			alt := pick(e, strings.ToUpper(names[k]), strings.ToLower(names[k]), strings.Title(names[k]))
			ms[k] = jsonString(alt) + ms[k][len(jsonString(names[k])):]
			what = "case variant of " + names[k]
			break
		}
		fallthrough
	case 4:
		if len(names) > 0 {
			k := e.intn(len(names))
			r, size := utf8.DecodeRuneInString(names[k])
			escaped := fmt.Sprintf(`"\u%04x%s`, r, jsonString(names[k][size:])[1:])
			ms = append(ms, escaped+ms[k][len(jsonString(names[k])):])
			what = "duplicate escaped key"
			break
		}
		fallthrough
	default:
		ms = append(ms, `"n\u0430me":"homoglyph"`)
		what = "homoglyph key"
	}
	if depth == 0 && chance(e, 20) {
		return "[" + strings.Join(ms, ",") + "]", "array instead of object"
	}
	return "{" + strings.Join(ms, ",") + "}", what
}

// textMutation changes the text of an instance.
func (g *valueGen) textMutation(v string) string {
	e := g.e
	var out string
	switch e.intn(12) {
	case 0:
		out = v + pick(e, " {}", "x", ",", " ", "\n\t")
	case 1:
		out = "\ufeff" + v
	case 2:
		if len(v) > 1 {
			out = v[:e.intn(len(v))]
		}
	case 3:
		out = pick(e, "", " ", "null", "[]", `"str"`, "42", "NaN", "Infinity", "-Infinity", "{", "}", "{}")
	case 4:
		out = strings.Replace(v, `"`, "\"\xff", 1)
	case 5:
		out = strings.Repeat("[", 100) + strings.Repeat("]", 100)
	case 6:
		out = strings.Replace(v, ":", ": NaN ,\"z\":", 1)
	case 7:
		out = "\r\n " + v + " \t"
	case 8:
		out = strings.Replace(v, `"`, `"\ud800`, 1)
	case 9:
		out = v + v
	default:
		i := e.intn(len(v) + 1)
		out = v[:i] + string(rune(pick(e, '"', '{', '[', ',', '\\', 0))) + v[i:]
	}
	if g.hasFormat {
		g.ex |= exFormat
	}
	if g.hasTime {
		g.ex |= exFormat // a time.Time is a date-time string too
	}
	if g.hasTextHook {
		g.ex |= exTextHook
	}
	g.mutated = "text: " + strconv.Quote(out)
	return out
}

// ---------------------------------------------------------------------------
// Judges.

type verdict struct {
	ok       bool
	detail   string
	syntax   bool // the judge refused the text itself
	panicked bool
	out      []byte // internal/jsonschema: the instance with defaults applied
	plain    string // the decoder's violations without hints (hints may quote a type's own error)
}

func decodeVerdict(c *schema.Codec, t reflect.Type, data []byte) (v verdict, bound reflect.Value) {
	return decodeVerdictDepth(c, t, data, maxDepth)
}

func decodeVerdictDepth(c *schema.Codec, t reflect.Type, data []byte, depth int) (v verdict, bound reflect.Value) {
	x := reflect.New(t).Elem()
	vs, err := c.Decode(data, x, depth)
	switch {
	case err != nil:
		return verdict{detail: "syntax: " + err.Error(), syntax: true}, x
	case len(vs) > 0:
		var b, plain strings.Builder
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: expected %s, got %s; ", v.Pointer, v.Expected, v.Got)
			fmt.Fprintf(&plain, "%s: expected %s, got %s; ", v.Pointer, v.Expected, v.Got)
			if v.Hint != "" {
				fmt.Fprintf(&b, "(%s) ", v.Hint)
			}
		}
		return verdict{detail: b.String(), plain: plain.String()}, x
	}
	return verdict{ok: true}, x
}

func validateVerdict(s *jsonschema.Schema, data []byte) verdict {
	return validateVerdictDepth(s, data, maxDepth)
}

func validateVerdictDepth(s *jsonschema.Schema, data []byte, depth int) (v verdict) {
	defer func() {
		if r := recover(); r != nil {
			v = verdict{detail: fmt.Sprintf("PANIC in internal/jsonschema on %q: %v", data, r), panicked: true}
		}
	}()
	if len(bytes.Trim(data, " \t\r\n")) == 0 { // JSON whitespace only
		data = []byte("{}") // as Registry.Execute and Decode read blank arguments
	}
	out, vs, err := s.Validate(data, jsonschema.Limits{MaxDepth: depth})
	switch {
	case err != nil:
		return verdict{detail: "syntax: " + err.Error(), syntax: true}
	case len(vs) > 0:
		var b strings.Builder
		for _, v := range vs {
			b.WriteString(v.String() + "; ")
		}
		return verdict{detail: b.String()}
	}
	return verdict{ok: true, out: out}
}

func compileOracle(doc []byte) (*oracle.Schema, error) {
	x, err := oracle.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	c := oracle.NewCompiler()
	c.DefaultDraft(oracle.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("mem:///schema.json", x); err != nil {
		return nil, err
	}
	return c.Compile("mem:///schema.json")
}

func oracleVerdict(s *oracle.Schema, data []byte) verdict {
	if len(bytes.Trim(data, " \t\r\n")) == 0 { // JSON whitespace only
		data = []byte("{}")
	}
	x, err := oracle.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return verdict{detail: "syntax: " + err.Error(), syntax: true}
	}
	if err := s.Validate(x); err != nil {
		return verdict{detail: err.Error()}
	}
	return verdict{ok: true}
}

// ---------------------------------------------------------------------------
// Exceptions: the only disagreements the test accepts. Each applies when
// the generator marked the instance with its class (it wrote the kind of
// value the exception is about) and the disagreement goes the stated way.

type exception struct {
	class  exClass
	name   string
	reason string
	// decoderOK and judgeOK are the verdicts the exception explains; nil
	// means either.
	decoderOK, judgeOK *bool
	// oracleOnly limits the exception to disagreements with
	// santhosh-tekuri; internal/jsonschema must agree with the decoder.
	oracleOnly bool
}

var (
	yes, no = ptr(true), ptr(false)
)

func ptr[T any](v T) *T { return &v }

var exceptions = []exception{
	{exRange, "64-bit range", "the schema of an int, int64, uint, uint64 or float64 field, of an any field (numbers " +
		"decode to float64) and of a number type that parses a float64 in UnmarshalJSON states no bound at the " +
		"type's range (±2^63 in every schema would be noise for the model); the decoder refuses literals beyond " +
		"it, such as 9223372036854775808 or 1e400, which the schema allows", no, yes, false},
	{exStringRange, ",string range", "a ,string number is described by a pattern on its digits, which cannot state " +
		"the Go type's range; the decoder refuses \"300\" for an int8", no, yes, false},
	{exPrecision, "float64 precision", "the decoder compares numbers as float64 (or int64) values, the validators " +
		"compare the exact decimal: literals with more than 15 significant digits, or beyond ±1e300, can round " +
		"onto or off a bound or an integer (0.99999999999999999999 binds as the integer 1 and passes minimum 1; " +
		"9007199254740993 passes maximum 9007199254740992). multipleOf is exact (decimal arithmetic on the literal). Making " +
		"bounds and integer checks exact too would remove this exception", nil, nil, false},
	{exFormat, "format checkers (oracle)", "string fields with a format are checked by jsontext's checkers in the decoder " +
		"and in internal/jsonschema, which must agree; santhosh-tekuri has its own, which may differ on edge cases",
		nil, nil, true},
	{exTextHook, "UnmarshalText without a schema", "a type with its own UnmarshalText and no JSONSchema method " +
		"(netip.Addr) is described as a string: the schema cannot know which strings the method takes; a type " +
		"that states it (JSONSchema, as Celsius does) is held to full agreement", no, yes, false},
}

func allowed(ex exClass, decoderOK, judgeOK, oracle bool) (string, bool) {
	for _, x := range exceptions {
		if ex&x.class == 0 || x.oracleOnly && !oracle {
			continue
		}
		if x.decoderOK != nil && *x.decoderOK != decoderOK || x.judgeOK != nil && *x.judgeOK != judgeOK {
			continue
		}
		return x.name, true
	}
	return "", false
}

// ---------------------------------------------------------------------------
// The test.

type stats struct {
	types, refused, instances, accepted, oracleSkipped, outputChecked int
	excused                                                           map[string]int
}

func TestAgreement(t *testing.T) {
	seed := *propSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	types, perType := 200, 60
	if testing.Short() {
		types, perType = 80, 40
	}
	if *propTypes > 0 {
		types = *propTypes
	}
	t.Logf("seed %d (rerun with -prop.seed=%d)", seed, seed)
	st := &stats{excused: map[string]int{}}
	failures := 0
	for i := 0; i < types && failures < 5; i++ {
		typeSeed := seed + uint64(i)
		if !checkType(t, typeSeed, perType, st) {
			failures++
			t.Errorf("type #%d failed: rerun it alone with -prop.seed=%d -prop.types=1", i, typeSeed)
		}
	}
	t.Logf("%d types (%d refused by For), %d instances, %d accepted by the decoder, %d not given to the oracle (not strict JSON), "+
		"%d bound values checked against the output schema", st.types, st.refused, st.instances, st.accepted, st.oracleSkipped, st.outputChecked)
	for _, x := range exceptions {
		if n := st.excused[x.name]; n > 0 {
			t.Logf("exception %q excused %d disagreements", x.name, n)
		}
	}
	if st.instances > 0 && st.accepted*10 < st.instances {
		t.Errorf("only %d of %d instances were accepted: the generator no longer writes valid values", st.accepted, st.instances)
	}
}

// checkType generates one type from seed and checks perType instances.
func checkType(t *testing.T, seed uint64, perType int, st *stats) (ok bool) {
	e := pcg{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	tg := &typeGen{e: e}
	sh := tg.genRoot()
	st.types++
	j, ok := newJudges(t, sh, st)
	if j == nil {
		return ok
	}
	vg := &valueGen{e: e}
	if chance(e, 25) {
		j.depth = 1 + e.intn(6)
	}
	vg.maxDepth = j.depth
	bad := 0
	for k := 0; k < perType && bad < 3; k++ {
		data := []byte(vg.instance(sh, k%3 != 0))
		if !j.check(t, data, vg, st) {
			bad++
		}
	}
	if bad > 0 {
		t.Logf("type #%d came from seed %d", st.types-1, seed)
	}
	return bad == 0
}

// judges holds a generated type's codec and its schema compiled by both
// validators.
type judges struct {
	sh   *shape
	c    *schema.Codec
	doc  []byte
	gs   *jsonschema.Schema
	osch *oracle.Schema
	out  *jsonschema.Schema // the output schema: what encoding/json writes
	// depth is the nesting limit both judges get: the registry passes
	// one limit to both paths, so they must count levels the same way.
	depth int
}

// newJudges derives the codec of sh and compiles its schema. It returns
// nil when For refused the type (ok reports whether that is allowed) or
// when something failed (ok is false).
func newJudges(t *testing.T, sh *shape, st *stats) (j *judges, ok bool) {
	var c *schema.Codec
	var err error
	var outSchema *jsonschema.Schema
	for _, output := range []bool{true, false} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("schema.For(%v, %v) panicked: %v", sh.t, output, r)
					c, err = nil, nil
				}
			}()
			c, err = schema.For(sh.t, output)
		}()
		if c == nil && err == nil {
			return nil, false
		}
		if output && c != nil {
			// The output schema must compile too.
			if outSchema, err = jsonschema.Compile(c.Schema()); err != nil {
				t.Errorf("type %v: output schema %s does not compile: %v", sh.t, c.Schema(), err)
				return nil, false
			}
		}
	}
	if c == nil {
		st.refused++
		if !refusalExpected(sh) {
			t.Errorf("schema.For(%v) = %v, want a codec", sh.t, err)
			return nil, false
		}
		return nil, true
	}
	if refusalExpected(sh) {
		t.Errorf("schema.For(%v) succeeded, want an error (,string on a string, or with bounds)", sh.t)
		return nil, false
	}
	j = &judges{sh: sh, c: c, doc: c.Schema(), out: outSchema, depth: maxDepth}
	if !json.Valid(j.doc) {
		t.Errorf("type %v: schema is not valid JSON: %s", sh.t, j.doc)
		return nil, false
	}
	if j.gs, err = jsonschema.Compile(j.doc); err != nil {
		t.Errorf("type %v: jsonschema.Compile(%s) = %v", sh.t, j.doc, err)
		return nil, false
	}
	if j.osch, err = compileOracle(j.doc); err != nil {
		t.Errorf("type %v: santhosh-tekuri Compile(%s) = %v", sh.t, j.doc, err)
		return nil, false
	}
	return j, true
}

// check runs the three judges on one instance written by vg and reports
// whether they agree (up to the exceptions vg marked).
func (j *judges) check(t *testing.T, data []byte, vg *valueGen, st *stats) bool {
	sh, doc := j.sh, j.doc
	st.instances++
	var dv verdict
	var bound reflect.Value
	panicked := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				panicked = true
				t.Errorf("type %v\nschema %s\ninstance %q (%s)\nDecode panicked: %v", sh.t, doc, data, vg.mutated, r)
			}
		}()
		dv, bound = decodeVerdictDepth(j.c, sh.t, data, j.depth)
	}()
	if panicked {
		return false
	}
	if dv.ok {
		st.accepted++
	}
	good := true
	if tok := goSyntax(dv.plain, data); tok != "" {
		t.Errorf("type %v\ninstance %q\nthe decoder's message shows %q, Go syntax the model must not see: %s", sh.t, data, tok, dv.detail)
		good = false
	}
	gv := validateVerdictDepth(j.gs, data, j.depth)
	if gv.panicked {
		t.Errorf("type %v\nschema %s\n%s", sh.t, doc, gv.detail)
		return false
	}
	if tok := goSyntax(gv.detail, data); tok != "" {
		t.Errorf("type %v\ninstance %q\nthe validator's message shows %q: %s", sh.t, data, tok, gv.detail)
		good = false
	}
	report := func(judge string, jv verdict) {
		if dv.ok == jv.ok {
			return
		}
		if name, ok := allowed(vg.ex, dv.ok, jv.ok, judge == "santhosh-tekuri"); ok {
			st.excused[name]++
			if *propVerbose {
				t.Logf("excused by %q: %s: instance %q (%s): decoder ok=%v %s; %s ok=%v %s", name, sh.t, data, vg.mutated, dv.ok, dv.detail, judge, jv.ok, jv.detail)
			}
			return
		}
		good = false
		t.Errorf("disagreement\ntype %v\nschema %s\ninstance %q\nmutation: %s\ndecoder ok=%v %s\n%s ok=%v %s",
			sh.t, doc, data, vg.mutated, dv.ok, dv.detail, judge, jv.ok, jv.detail)
	}
	report("internal/jsonschema", gv)
	if gv.syntax || dv.syntax {
		// santhosh-tekuri reads JSON with encoding/json, which takes
		// duplicate keys, invalid UTF-8 and lone surrogates.
		st.oracleSkipped++
	} else {
		report("santhosh-tekuri", oracleVerdict(j.osch, data))
	}
	if dv.ok && j.out != nil && unconstrained(sh, map[*shape]bool{}) {
		// Whatever binds is a value of the type, and the output schema
		// describes the shape encoding/json writes for any value of the
		// type. (Keywords from tags are a promise about values that zero
		// values need not keep, so only types without them are checked.)
		if out, err := json.Marshal(bound.Interface()); err == nil {
			st.outputChecked++
			if rv := validateVerdict(j.out, out); !rv.ok && vg.ex&exPrecision == 0 {
				t.Errorf("type %v\ninstance %q bound; json.Marshal wrote %s, which the output schema refuses: %s", sh.t, data, out, rv.detail)
				good = false
			}
		}
	}
	if dv.ok && gv.ok && vg.ex&exPrecision == 0 {
		// Both apply defaults: the validator's output (the instance
		// with the defaults written in) binds to the value Decode bound
		// from the instance.
		y, yb := decodeVerdictDepth(j.c, sh.t, gv.out, 1000) // defaults are not held to the input's limit
		if !y.ok {
			t.Errorf("type %v\nschema %s\ninstance %q\nthe validator's output with defaults %s does not decode: %s", sh.t, doc, data, gv.out, y.detail)
			return false
		}
		if !reflect.DeepEqual(yb.Interface(), bound.Interface()) {
			a, _ := json.Marshal(bound.Interface())
			b, _ := json.Marshal(yb.Interface())
			t.Errorf("type %v\nschema %s\ninstance %q\nDecode bound %s\nthe validator's output %s binds as %s", sh.t, doc, data, a, gv.out, b)
			good = false
		}
	}
	if dv.ok && gv.ok && remarshalSafe(sh, map[*shape]bool{}) {
		// A value that binds, marshalled again, validates.
		out, err := json.Marshal(bound.Interface())
		if err != nil {
			t.Errorf("type %v: instance %q bound, but json.Marshal of the bound value failed: %v", sh.t, data, err)
			return false
		}
		if rv := validateVerdict(j.gs, out); !rv.ok {
			if vg.ex&exPrecision != 0 {
				st.excused["float64 precision"]++ // the float64 the value became is not the literal
				return good
			}
			t.Errorf("type %v\nschema %s\ninstance %q bound, but its re-marshalled form %s does not validate: %s", sh.t, doc, data, out, rv.detail)
			return false
		}
	}
	return good
}

// unconstrained reports whether no field of sh carries a keyword that
// limits values.
func unconstrained(sh *shape, seen map[*shape]bool) bool {
	if seen[sh] {
		return true
	}
	seen[sh] = true
	switch sh.k {
	case gColor, gCelsius:
		return false // their types state values: an enum, a minimum
	case gPtr, gSlice, gArray, gMap:
		return unconstrained(sh.elem, seen)
	case gStruct:
		if sh == treeShape || sh == embeddedShape {
			return false
		}
		for _, f := range sh.fields {
			c := f.c
			if c.lo != nil || c.hi != nil || c.mult != "" || c.minLen >= 0 || c.maxLen >= 0 || c.pat != nil ||
				c.format != "" || len(c.enum) > 0 || c.minItems >= 0 || c.maxItems >= 0 || c.unique ||
				c.minProps >= 0 || c.maxProps >= 0 || !unconstrained(f.sh, seen) {
				return false
			}
		}
	}
	return true
}

// selfDecoding reports whether For refuses ,string on values of shape sh:
// strings (a JSON string inside a string) and types that decode
// themselves (their hook, not the option, decides what they take).
func selfDecoding(sh *shape) bool {
	switch sh.k {
	case gString, gNumber, gColor, gTime, gRaw, gAddr, gCelsius:
		return true
	}
	return false
}

// contains reports whether sh holds a value of kind k anywhere.
func contains(sh *shape, k gkind, seen map[*shape]bool) bool {
	if sh.k == k {
		return true
	}
	if seen[sh] {
		return false
	}
	seen[sh] = true
	switch sh.k {
	case gPtr, gSlice, gArray, gMap:
		return contains(sh.elem, k, seen)
	case gStruct:
		for _, f := range sh.fields {
			if contains(f.sh, k, seen) {
				return true
			}
		}
	}
	return false
}

// goSyntax returns a token of msg that is Go syntax (a type, a package, a
// function) and is not in the instance, or "".
func goSyntax(msg string, data []byte) string {
	for _, tok := range []string{"schema_test", "struct {", "interface {", "[]uint8", "map[string]", "reflect.",
		"netip.", "strconv.", "time.Time", "json.Number", "json.RawMessage", "ParseAddr(", "Celsius", "*schema.",
		".go:", "goroutine "} {
		if strings.Contains(msg, tok) && !bytes.Contains(data, []byte(tok)) {
			return tok
		}
	}
	return ""
}

// remarshalSafe reports whether encoding/json marshals every bound value
// of sh in a form its schema accepts: it does not when an optional field
// left out of the instance marshals as its zero value anyway (omitempty
// does not omit structs or non-empty arrays, and a zero struct need not
// validate: its nil maps and slices marshal as null, its numbers as 0).
func remarshalSafe(sh *shape, seen map[*shape]bool) bool {
	if seen[sh] {
		return true
	}
	seen[sh] = true
	switch sh.k {
	case gPtr, gSlice, gArray, gMap:
		return remarshalSafe(sh.elem, seen)
	case gStruct:
		for _, f := range sh.fields {
			if !f.required && !f.c.hasDefault && f.sh.k != gPtr && f.omit != "omitzero" {
				switch f.sh.k {
				case gStruct, gTime:
					return false
				case gArray:
					if f.sh.n > 0 {
						return false
					}
				}
			}
			if in := inner(f.sh); f.c.unique && (in.k == gSlice || in.k == gArray) && !uniqueOK(in.elem, map[*shape]bool{}) {
				return false
			}
			if !remarshalSafe(f.sh, seen) {
				return false
			}
		}
	}
	return true
}

// refusalExpected reports whether For must refuse a generated type: the
// ,string option on a string or json.Number, or with minimum, maximum or
// multipleOf (no schema can state those on a number held in a string); a
// keyword tag on a kind it does not apply to.
func refusalExpected(sh *shape) bool {
	return refused(sh, map[*shape]bool{})
}

func refused(sh *shape, seen map[*shape]bool) bool {
	if seen[sh] {
		return false
	}
	seen[sh] = true
	switch sh.k {
	case gPtr, gSlice, gArray, gMap:
		return refused(sh.elem, seen)
	case gStruct:
		for _, f := range sh.fields {
			in := inner(f.sh)
			ptrPtr := f.sh.k == gPtr && f.sh.elem.k == gPtr
			if f.strTag && !ptrPtr && selfDecoding(in) {
				return true
			}
			if in.k == gArray && (f.c.minItems >= 0 && f.c.minItems != in.n || f.c.maxItems >= 0 && f.c.maxItems != in.n) {
				return true
			}
			if f.str && (f.c.lo != nil || f.c.hi != nil || f.c.mult != "" || f.minTag) {
				return true
			}
			if f.misfit {
				return true
			}
			if refused(f.sh, seen) {
				return true
			}
		}
	}
	return false
}

// Sanity checks of the generator itself.
func TestGeneratorHelpers(t *testing.T) {
	for _, tc := range []struct {
		k    int64
		m    string
		want string
	}{{7, "0.1", "0.7"}, {-3, "0.25", "-0.75"}, {0, "0.5", "0"}, {12, "5", "60"}, {1, "0.01", "0.01"}} {
		if got := decimalTimes(tc.k, tc.m); got != tc.want {
			t.Errorf("decimalTimes(%d, %s) = %s, want %s", tc.k, tc.m, got, tc.want)
		}
	}
	for _, p := range safePatterns {
		re := regexp.MustCompile(p.src)
		e := pcg{rand.New(rand.NewPCG(1, 2))}
		for range 20 {
			if s := p.gen(e); !re.MatchString(s) {
				t.Errorf("pattern %s: generated %q does not match", p.src, s)
			}
		}
	}
	if n := significantDigits("-0.000123450e10"); n != 5 {
		t.Errorf("significantDigits = %d, want 5", n)
	}
}

// TestBugPins pins the disagreements TestAgreement found that were bugs
// rather than documented exceptions (all fixed now: f484540, 0989c04,
// 7c12a9c, da28e5f, c5daaec, 1db1e3f, c160560),
// each with the smallest instance that showed it, as regression tests.
func TestBugPins(t *testing.T) {
	type (
		Obj struct {
			A int `json:"a"`
		}
		StrEnum struct {
			F float64 `json:"f,string" enum:"691,2597"`
		}
		StrMin struct {
			N int `json:"n,string" minimum:"5" multipleOf:"5"`
		}
		StrBool struct {
			B *bool `json:"b,string"`
		}
		F32Mult struct {
			F float32 `json:"f" multipleOf:"0.1"`
		}
		F32Max struct {
			F float32 `json:"f" maximum:"0.1"`
		}
		F32Enum struct {
			F float32 `json:"f" enum:"0.7,1.5"`
		}
		UniqAny struct {
			L []any `json:"l" uniqueItems:"true"`
		}
		UniqNest struct {
			L [][]int `json:"l" uniqueItems:"true"`
		}
		UniqPtr struct {
			L []*int `json:"l" uniqueItems:"true"`
		}
		StrStr struct {
			S string `json:"s,string" pattern:"^[A-Z]{3}$"`
		}
		When struct {
			T time.Time `json:"t"`
		}
		HoldsAny struct {
			X any `json:"x"`
		}
		UniqAnyS struct {
			L []HoldsAny `json:"l" uniqueItems:"true"`
		}
		WithDef struct {
			S string `json:"s" default:"a"`
		}
		UniqDef struct {
			L []WithDef `json:"l" uniqueItems:"true"`
		}
		UniqTree struct {
			L []Tree `json:"l" uniqueItems:"true"`
		}
		StrHook struct {
			C Celsius `json:"c,string"`
		}
		StrPtrPtr struct {
			P **uint16 `json:"p,string"`
		}
		Hooked struct {
			A netip.Addr `json:"a"`
			C Celsius    `json:"c"`
		}
	)
	cases := []struct {
		name, why string
		typ       reflect.Type
		output    bool
		instance  string
		refuse    bool // For refusing the type is a fix
	}{
		{"null_root", "the schema of a pointer to a struct allows null at the root, Decode refuses it; " +
			"fix: render object roots without null (IsObject already says null is not allowed there)",
			reflect.TypeFor[*Obj](), false, `null`, false},
		{"string_enum", "a ,string number's enum is rendered as strings but compared as numbers; " +
			"fix: compare the text inside the quotes with the enum's strings in quoted()",
			reflect.TypeFor[StrEnum](), false, `{"f":"691.0"}`, false},
		{"string_bounds", "minimum/maximum/multipleOf on a ,string number are enforced but not rendered; " +
			"fix: refuse these tags on ,string fields in For (a pattern cannot state them), or stop enforcing them",
			reflect.TypeFor[StrMin](), false, `{"n":"1"}`, true},
		{"string_bool_null", "a ,string *bool renders \"enum\":[\"true\",\"false\"] without null; " +
			"fix: in render.go keywords(), append null to that enum when nullable",
			reflect.TypeFor[StrBool](), false, `{"b":null}`, false},
		{"float32_multiple", "float32 values were checked after rounding to float32, so 8047.7 was not a multiple of 0.1",
			reflect.TypeFor[F32Mult](), false, `{"f":8047.7}`, false},
		{"float32_maximum", "float32 values are checked after rounding to float32: float32(0.1) = 0.10000000149 > 0.1; " +
			"fix: check bounds and enum on the literal (ParseFloat(lit, 64), as for float64), then store the float32",
			reflect.TypeFor[F32Max](), false, `{"f":0.1}`, false},
		{"float32_enum", "float32(0.7) is not the float64 0.7 of the enum", reflect.TypeFor[F32Enum](), false, `{"f":0.7}`, false},
		{"unique_any", "uniqueItems puts elements in a map[any]int: []any elements that are slices or maps panic " +
			"(hash of unhashable type); fix: compare the elements' canonical JSON (or reflect.DeepEqual) when the " +
			"element type is not comparable",
			reflect.TypeFor[UniqAny](), false, `{"l":[[1],[2]]}`, false},
		{"unique_nested", "the same panic for [][]int", reflect.TypeFor[UniqNest](), false, `{"l":[[1],[2]]}`, false},
		{"unique_struct_any", "a struct holding an any is a comparable type, but comparing it panics when the any " +
			"holds a slice or map (hash of unhashable type []interface {}); fix: compare such items by their JSON too " +
			"(decide by the node tree whether an item can hold a slice or map, not by reflect.Type.Comparable)",
			reflect.TypeFor[UniqAnyS](), false, `{"l":[{"x":[1]},{"x":[2]}]}`, false},
		{"unique_after_defaults", "items are compared after defaults are applied, so [{\"s\":\"a\"},{}] has two " +
			"equal items for the decoder and none for JSON Schema, which compares the instance as written; fix: compare " +
			"the items' JSON text (canonical form) as it came, before defaults",
			reflect.TypeFor[UniqDef](), false, `{"l":[{"s":"a"},{}]}`, false},
		{"unique_absent_vs_empty", "the same for an optional field left out and the field given as its zero value: " +
			"{\"v\":4} and {\"v\":4,\"kids\":[]} bind to equal Trees (nil and empty slices compare equal by their JSON)",
			reflect.TypeFor[UniqTree](), false, `{"l":[{"v":4},{"v":4,"kids":[]}]}`, false},
		{"unique_pointers", "[]*int elements are compared as pointers, so [1,1] passes uniqueItems; " +
			"fix: compare what the pointers point to (or the items' JSON)",
			reflect.TypeFor[UniqPtr](), false, `{"l":[1,1]}`, false},
		{"string_opt_on_strings", "encoding/json honours ,string on string fields (it writes \"\\\"ABC\\\"\"), " +
			"the output schema describes a plain string; fix: in output mode, render a ,string string as a string " +
			"holding a JSON string, or refuse ,string on strings in For",
			reflect.TypeFor[StrStr](), true, ``, true},
		{"string_opt_on_hooks", "encoding/json honours ,string on a number type with its own UnmarshalJSON (it " +
			"writes \"21.5\" and reads \"21.5\", passing 21.5 to the method); the decoder passes the raw value to the " +
			"method and the schemas describe a number; fix: refuse ,string on types with JSON or text hooks in For, " +
			"as on strings",
			reflect.TypeFor[StrHook](), true, ``, true},
		{"string_opt_pointer_pointer", "encoding/json applies ,string to T and *T only: it writes a **uint16 as 7550 " +
			"and refuses \"7550\" for it; the decoder and both schemas apply the option through every pointer; " +
			"fix: set stringOpt only when the field's type is T or *T, as encoding/json does (or refuse it on **T)",
			reflect.TypeFor[StrPtrPtr](), true, ``, true},
		{"date_time_offset", "time.Time's parser takes \"+24:00\" and \",5\" fractions that RFC 3339 and the generic " +
			"validator refuse, and json.Marshal then fails on the bound value; fix: check the RFC 3339 grammar " +
			"(jsonschema's isDate/isTime) before UnmarshalText, in one shared checker",
			reflect.TypeFor[When](), false, `{"t":"2026-12-24T10:00:00+24:00"}`, false},
	}
	t.Run("validator_cut_backslash", func(t *testing.T) {
		// internal/jsonschema cut a long value to 256 bytes for its message
		// and then read past a backslash at the cut: index out of range,
		// through Registry.Execute for every hand-written tool (fixed by a
		// bounds check in compact, committed in c5daaec).
		s, err := jsonschema.Compile([]byte(`{"type":"object","additionalProperties":false}`))
		if err != nil {
			t.Fatal(err)
		}
		data := []byte(`{"x":"` + strings.Repeat("a", 254) + `\\n"}`)
		if v := validateVerdict(s, data); v.panicked || v.ok {
			t.Errorf("Validate(%s): %+v, want a violation", data, v)
		}
	})
	t.Run("enum_hides_keywords", func(t *testing.T) {
		// An enum value that breaks the field's other keywords is
		// accepted by For, and the violation then names only the enum:
		// "expected one of 1, 50, got 50". Fix: check enum values with
		// the field's own decoder in For, as examples and defaults are,
		// or say which keyword failed.
		type T struct {
			C string `json:"c" enum:"abc,b" maxLength:"2"`
			N int    `json:"n" enum:"1,50" maximum:"10"`
		}
		c, err := schema.For(reflect.TypeFor[T](), false)
		if err != nil {
			return // refused: fixed
		}
		v := reflect.New(reflect.TypeFor[T]()).Elem()
		vs, err := c.Decode([]byte(`{"c":"abc","n":50}`), v, maxDepth)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range vs {
			if !strings.Contains(x.Expected+x.Hint, "character") && !strings.Contains(x.Expected+x.Hint, "10") {
				t.Errorf("%s: expected %s, got %s (%s): the message names the enum only, but the value is in it", x.Pointer, x.Expected, x.Got, x.Hint)
			}
		}
	})
	t.Run("hook_error_in_message", func(t *testing.T) {
		// A type's own UnmarshalText or UnmarshalJSON error becomes the
		// violation's hint word for word: "ParseAddr(\"1.2.3\"): IPv4
		// address too short", "strconv.ParseFloat: parsing \"1e400\":
		// value out of range". Messages to a model carry no Go syntax
		// (and a third-party error may hold anything, paths included).
		// Fix: leave the hook's error to the log, or keep only the text
		// after the last ": " when it has no Go syntax left.
		c, err := schema.For(reflect.TypeFor[Hooked](), false)
		if err != nil {
			t.Fatal(err)
		}
		v := reflect.New(reflect.TypeFor[Hooked]()).Elem()
		vs, err := c.Decode([]byte(`{"a":"1.2.3","c":1e400}`), v, maxDepth)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range vs {
			msg := x.Expected + " " + x.Got + " " + x.Hint
			if tok := goSyntax(msg, nil); tok != "" {
				t.Errorf("%s: the message shows %q: expected %s, got %s (%s)", x.Pointer, tok, x.Expected, x.Got, x.Hint)
			}
		}
	})
	t.Run("array_item_tags", func(t *testing.T) {
		// minItems/maxItems tags on a Go array: the schema states the
		// array's length (minItems = maxItems = N) and drops the tags,
		// the decoder checks the tags too, so [] is refused for a [0]T
		// with minItems 1 ("expected an array of exactly 0 items, got an
		// array of 0 items"). Fix: refuse these tags on arrays in For (the
		// length states them), or ignore them in decodeArray as the
		// renderer does.
		type T struct {
			A [0]int `json:"a" minItems:"1"`
			B [2]int `json:"b" maxItems:"1"`
		}
		c, err := schema.For(reflect.TypeFor[T](), false)
		if err != nil {
			return // refused: fixed
		}
		gs, err := jsonschema.Compile(c.Schema())
		if err != nil {
			t.Fatal(err)
		}
		data := []byte(`{"a":[],"b":[1,2]}`)
		dv, _ := decodeVerdict(c, reflect.TypeFor[T](), data)
		if gv := validateVerdict(gs, data); dv.ok != gv.ok {
			t.Errorf("schema %s\ninstance %s: decoder ok=%v %s; validator ok=%v %s", c.Schema(), data, dv.ok, dv.detail, gv.ok, gv.detail)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := schema.For(tc.typ, tc.output)
			if err != nil {
				if tc.refuse {
					return
				}
				t.Fatalf("For: %v", err)
			}
			gs, err := jsonschema.Compile(c.Schema())
			if err != nil {
				t.Fatalf("Compile(%s): %v", c.Schema(), err)
			}
			instance := []byte(tc.instance)
			if tc.output {
				v := reflect.New(tc.typ).Elem()
				switch f := v.Field(0); f.Kind() {
				case reflect.String:
					f.SetString("ABC")
				case reflect.Pointer:
					x := uint16(7550)
					px := &x
					f.Set(reflect.ValueOf(&px))
				default:
					f.SetFloat(21.5)
				}
				instance, _ = json.Marshal(v.Interface())
			} else {
				var dv verdict
				var bound reflect.Value
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("Decode(%s) panicked: %v\n%s", instance, r, tc.why)
						}
					}()
					dv, bound = decodeVerdict(c, tc.typ, instance)
				}()
				if dv.ok {
					if _, err := json.Marshal(bound.Interface()); err != nil {
						t.Errorf("Decode(%s) bound a value json.Marshal refuses: %v\n%s", instance, err, tc.why)
					}
				}
				gv := validateVerdict(gs, instance)
				if dv.ok != gv.ok {
					t.Errorf("schema %s\ninstance %s: decoder ok=%v %s; validator ok=%v %s\n%s", c.Schema(), instance, dv.ok, dv.detail, gv.ok, gv.detail, tc.why)
				}
				return
			}
			if gv := validateVerdict(gs, instance); !gv.ok {
				t.Errorf("output schema %s\nrejects what encoding/json writes, %s: %s\n%s", c.Schema(), instance, gv.detail, tc.why)
			}
		})
	}
}
