// Package schema derives JSON Schemas from Go types and compiles, from the
// same type, a single-pass decoder that parses arguments strictly,
// validates them against that schema, applies defaults and binds them.
//
// The schema and the decoder come from one description of the type (the
// node tree built here), so a value that validates binds, and a value that
// binds validates.
package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
)

// Hooks mirror the root package's Schemer, Enumer and FieldDescriber.
type (
	schemer        interface{ JSONSchema() json.RawMessage }
	enumer         interface{ Enum() []any }
	fieldDescriber interface {
		FieldDescriptions() map[string]string
	}
)

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	schemerType         = reflect.TypeFor[schemer]()
	enumerType          = reflect.TypeFor[enumer]()
	describerType       = reflect.TypeFor[fieldDescriber]()
	timeType            = reflect.TypeFor[time.Time]()
	numberType          = reflect.TypeFor[json.Number]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()

	// A type that has math/big's SetString, its own or promoted from an
	// embedded field, decodes its text through math/big's conversion.
	bigIntType = reflect.TypeFor[interface {
		SetString(string, int) (*big.Int, bool)
	}]()
	bigFloatType = reflect.TypeFor[interface {
		SetString(string) (*big.Float, bool)
	}]()
	bigRatType = reflect.TypeFor[interface{ SetString(string) (*big.Rat, bool) }]()
	// A type with regexp.Regexp's methods compiles its text.
	regexpType = reflect.TypeFor[interface {
		SubexpNames() []string
		FindReaderIndex(io.RuneReader) []int
	}]()
)

type kind uint8

const (
	kString kind = iota
	kBool
	kInt
	kUint
	kFloat
	kNumber // json.Number
	kBytes  // []byte as base64
	kSlice
	kArray
	kMap
	kStruct
	kPointer
	kAny    // interface{} with no methods: any JSON value
	kRaw    // json.RawMessage: any JSON value, kept as text
	kTime   // time.Time: an RFC 3339 string
	kText   // encoding.TextUnmarshaler: a string
	kCustom // json.Unmarshaler: any JSON value (or its own schema)
)

// node describes one Go type. Struct nodes are shared by every use of
// their type, which is how recursive types are represented.
type node struct {
	kind kind
	typ  reflect.Type
	bits int // size of ints, uints and floats

	elem   *use // pointer, slice, array and map element
	length int  // array length

	fields []*field // struct fields in declaration order
	byName map[string]*field
	doc    string // struct description from FieldDescriptions

	enum   []json.RawMessage // from the Enum hook
	custom json.RawMessage   // from the JSONSchema hook
	check  customChecker     // compiled custom schema, if any
	bigNum bigKind           // a math/big number: its text is bounded before conversion

	ref       string // "$ref" target when the struct is recursive
	recursive bool
	building  bool
}

// customChecker validates a JSON value against a schema supplied by a
// type's JSONSchema hook.
type customChecker interface {
	check(raw []byte, ptr string) []Violation
}

// use is one use of a type: the type's node plus the keywords that use
// carries (from a field's tags).
type use struct {
	n *node
	c *constraints // shared noConstraints when the use carries none; never modified then

	stringOpt bool     // the ,string option
	enumSet   *enumSet // compiled enum, from c.enum or the node's
}

// field is one JSON property of a struct.
type field struct {
	name     string
	goName   string // Go path, for messages: Outer.Inner.Name
	index    []int
	u        *use
	required bool
	def      *defValue // applied when the property is missing
	bit      uint      // index in the struct's seen-set
}

// options of a build.
type buildOptions struct {
	output bool // describing Out: nil slices, maps and pointers marshal as null
}

type builder struct {
	opts     buildOptions
	nodes    map[reflect.Type]*node // the nodes of order by type, once order is long; nil before
	stack    []reflect.Type
	pending  []pendingUse   // uses whose enum, default or examples are compiled once all nodes exist
	defaults []pendingField // fields whose defaults are compiled once all nodes exist
	order    []*node        // struct nodes in the order they were found
	uses     []use          // room for the next uses: allocated 16 at a time, they live as long as the Codec anyway
}

// structNode returns the node of struct type t if it was made in this
// build, else nil.
func (b *builder) structNode(t reflect.Type) *node {
	if b.nodes != nil {
		return b.nodes[t]
	}
	for _, n := range b.order {
		if n.typ == t {
			return n
		}
	}
	return nil
}

// addStruct records the node of a struct type. The few struct types of a
// build are found by a scan of b.order; a map is made past 32.
func (b *builder) addStruct(n *node) {
	b.order = append(b.order, n)
	if b.nodes == nil && len(b.order) > 32 {
		b.nodes = make(map[reflect.Type]*node, 2*len(b.order))
		for _, m := range b.order {
			b.nodes[m.typ] = m
		}
		return
	}
	if b.nodes != nil {
		b.nodes[n.typ] = n
	}
}

// newUse returns a use of n with c, from b.uses.
func (b *builder) newUse(n *node, c *constraints) *use {
	if len(b.uses) == cap(b.uses) {
		b.uses = make([]use, 0, 16)
	}
	b.uses = append(b.uses, use{n: n, c: c})
	return &b.uses[len(b.uses)-1]
}

type pendingField struct {
	f    *field
	path string
}

type pendingUse struct {
	u    *use
	path string
}

// An error from building names the Go path of the field at fault.
type buildError struct {
	path string
	msg  string
}

func (e *buildError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func errorf(path, format string, args ...any) error {
	return &buildError{path: path, msg: fmt.Sprintf(format, args...)}
}

// typeUse builds the use of t at path with the given keywords. The
// keywords of a pointer's use go to the value it points to: a pointer use
// only adds null to what the value allows.
func (b *builder) typeUse(t reflect.Type, c *constraints, path string) (*use, error) {
	if t.Kind() == reflect.Pointer {
		inner, err := b.typeUse(t.Elem(), c, path)
		if err != nil {
			return nil, err
		}
		return b.newUse(&node{kind: kPointer, typ: t, elem: inner}, &noConstraints), nil
	}
	n, err := b.node(t, path)
	if err != nil {
		return nil, err
	}
	u := b.newUse(n, c)
	if len(c.enum) > 0 || len(n.enum) > 0 || c.def != nil || len(c.examples) > 0 {
		b.pending = append(b.pending, pendingUse{u: u, path: path})
	}
	return u, nil
}

// leafNodes holds the nodes of scalar types (strings, booleans, numbers
// without hooks), which are the same wherever the type is used. It is
// bounded by the program's own types.
var leafNodes sync.Map // leafKey → *node

type leafKey struct {
	t      reflect.Type
	output bool
}

// predeclaredNodes holds the nodes of the predeclared scalar types (string,
// bool, int, float64 and the rest), the types of most fields: such a type
// has no methods and its node is only its kind and size, the same for
// input and output, so it is made once here rather than looked up by
// type in leafNodes for every field.
var predeclaredNodes = func() (m [reflect.String + 1]*node) {
	for _, v := range []any{"", false, int(0), int8(0), int16(0), int32(0), int64(0),
		uint(0), uint8(0), uint16(0), uint32(0), uint64(0), uintptr(0), float32(0), float64(0)} {
		t := reflect.TypeOf(v)
		n := &node{typ: t}
		switch t.Kind() {
		case reflect.String:
			n.kind = kString
		case reflect.Bool:
			n.kind = kBool
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n.kind, n.bits = kInt, t.Bits()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n.kind, n.bits = kUint, t.Bits()
		case reflect.Float32, reflect.Float64:
			n.kind, n.bits = kFloat, t.Bits()
		}
		m[t.Kind()] = n
	}
	return m
}()

// isPredeclared reports whether t is one of the types of predeclaredNodes
// (not a named type of their kinds, which may have methods): comparing
// types is cheaper than a lookup by type.
func isPredeclared(t reflect.Type) bool {
	k := t.Kind()
	if k > reflect.Float64 && k != reflect.String {
		return false
	}
	n := predeclaredNodes[k]
	return n != nil && n.typ == t
}

// node returns the node of t, building it once per type for structs.
func (b *builder) node(t reflect.Type, path string) (*node, error) {
	if isPredeclared(t) {
		return predeclaredNodes[t.Kind()], nil
	}
	if n := b.structNode(t); n != nil {
		if n.building {
			n.recursive = true
		}
		return n, nil
	}
	key := leafKey{t, b.opts.output}
	if n, ok := leafNodes.Load(key); ok {
		return n.(*node), nil
	}
	n := &node{typ: t}
	tf := factsOf(t)
	n.bigNum = tf.bigNum
	switch {
	case t == timeType:
		n.kind = kTime
	case t == numberType:
		n.kind = kNumber
	case t == rawMessageType:
		n.kind = kRaw
	case tf.jsonUnmarshaler:
		n.kind = kCustom
	case tf.textUnmarshaler:
		n.kind = kText
	case b.opts.output && tf.jsonMarshaler:
		n.kind = kCustom
	case b.opts.output && tf.textMarshaler:
		n.kind = kText
	}
	if tf.schemer {
		raw := reflect.New(t).Interface().(schemer).JSONSchema()
		if !json.Valid(raw) {
			return nil, errorf(path, "the JSONSchema method of %s returned invalid JSON", t)
		}
		n.custom = compact(raw)
		if n.kind != kCustom && n.kind != kText {
			return nil, errorf(path, "%s has a JSONSchema method but decodes as a plain %s; implement UnmarshalJSON or UnmarshalText too, so that what it accepts is what it says", t, t.Kind())
		}
		chk, err := compileCustom(n.custom)
		if err != nil {
			return nil, errorf(path, "the JSONSchema method of %s: %v", t, err)
		}
		n.check = chk
	}
	if n.kind == kCustom || n.kind == kText || n.kind == kTime || n.kind == kNumber || n.kind == kRaw {
		return n, nil
	}
	switch t.Kind() {
	case reflect.String:
		n.kind = kString
	case reflect.Bool:
		n.kind = kBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.kind, n.bits = kInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n.kind, n.bits = kUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		n.kind, n.bits = kFloat, t.Bits()
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !implementsAny(t.Elem()) {
			n.kind = kBytes
			break
		}
		n.kind = kSlice
		elem, err := b.typeUse(t.Elem(), &noConstraints, path+"[]")
		if err != nil {
			return nil, err
		}
		n.elem = elem
	case reflect.Array:
		n.kind, n.length = kArray, t.Len()
		elem, err := b.typeUse(t.Elem(), &noConstraints, path+"[]")
		if err != nil {
			return nil, err
		}
		n.elem = elem
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, errorf(path, "map keys must be strings (JSON object keys), not %s", t.Key())
		}
		n.kind = kMap
		elem, err := b.typeUse(t.Elem(), &noConstraints, path+"[key]")
		if err != nil {
			return nil, err
		}
		n.elem = elem
	case reflect.Interface:
		if t.NumMethod() > 0 {
			return nil, errorf(path, "interface type %s cannot be decoded from JSON; use a concrete type or any", t)
		}
		n.kind = kAny
	case reflect.Struct:
		n.kind = kStruct
		b.addStruct(n)
		n.building = true
		b.stack = append(b.stack, t)
		err := b.structFields(n, t, path)
		b.stack = b.stack[:len(b.stack)-1]
		n.building = false
		if err != nil {
			return nil, err
		}
	case reflect.Chan:
		return nil, errorf(path, "channel type %s cannot be expressed in JSON", t)
	case reflect.Func:
		return nil, errorf(path, "function type %s cannot be expressed in JSON", t)
	case reflect.Complex64, reflect.Complex128:
		return nil, errorf(path, "complex number type %s cannot be expressed in JSON", t)
	default:
		return nil, errorf(path, "type %s cannot be expressed in JSON", t)
	}
	if tf.enumer {
		vals := reflect.New(t).Interface().(enumer).Enum()
		if len(vals) == 0 {
			return nil, errorf(path, "the Enum method of %s returned no values", t)
		}
		for _, v := range vals {
			raw, err := marshalNoEscape(v)
			if err != nil {
				return nil, errorf(path, "the Enum method of %s: %v", t, err)
			}
			n.enum = append(n.enum, raw)
		}
	}
	if !tf.schemer && !tf.enumer && (n.kind == kString || n.kind == kBool || n.kind == kInt || n.kind == kUint || n.kind == kFloat) {
		// Nothing but the type decides such a node, and nothing changes
		// it later: share it.
		leafNodes.Store(key, n)
	}
	return n, nil
}

func implementsAny(t reflect.Type) bool {
	f := factsOf(t)
	return f.jsonUnmarshaler || f.textUnmarshaler || f.jsonMarshaler || f.textMarshaler
}

// facts are which hook interfaces a type implements, with a value or a
// pointer receiver.
type facts struct {
	jsonUnmarshaler, textUnmarshaler bool
	jsonMarshaler, textMarshaler     bool
	schemer, enumer, describer       bool
	bigNum                           bigKind
}

// bigKind says whether a type decodes through math/big's conversion of
// decimal text, whose work grows faster than the text (a million digits
// into a big.Int took 1.5 s of CPU), or through regexp's compiler, whose
// program grows with counted repetitions: such text is bounded before it
// is converted (MaxBigNumberText, MaxRegexpInsts).
type bigKind uint8

const (
	notBig        bigKind = iota
	bigNumber             // big.Int, big.Float: the text's length is bounded
	bigRational           // big.Rat: its exponent too, which it expands into digits
	regexpProgram         // regexp.Regexp: the program the text compiles to is bounded
)

// typeFacts caches facts by type: they never change, and looking up
// method sets is the largest cost of New otherwise.
var typeFacts sync.Map // reflect.Type -> facts

func factsOf(t reflect.Type) facts {
	if isPredeclared(t) {
		return facts{} // no methods
	}
	if f, ok := typeFacts.Load(t); ok {
		return f.(facts)
	}
	var f facts
	if t.NumMethod() > 0 || reflect.PointerTo(t).NumMethod() > 0 {
		pt := reflect.PointerTo(t)
		has := func(i reflect.Type) bool { return t.Implements(i) || pt.Implements(i) }
		f = facts{
			jsonUnmarshaler: has(jsonUnmarshalerType), textUnmarshaler: has(textUnmarshalerType),
			jsonMarshaler: has(jsonMarshalerType), textMarshaler: has(textMarshalerType),
			schemer: has(schemerType), enumer: has(enumerType), describer: has(describerType),
		}
		switch {
		case !f.jsonUnmarshaler && !f.textUnmarshaler:
		case has(bigRatType):
			f.bigNum = bigRational
		case has(regexpType):
			f.bigNum = regexpProgram
		case has(bigIntType), has(bigFloatType):
			f.bigNum = bigNumber
		}
	}
	typeFacts.Store(t, f)
	return f
}

// candidate is a field found while flattening embedded structs.
type candidate struct {
	name   string
	tagged bool
	depth  int
	index  []int
	typ    reflect.Type      // the field's
	tag    reflect.StructTag // the field's
	field  string            // the field's Go name; goName is its path
	goName string
	opts   string
	owner  reflect.Type // the struct type that declares the field
}

// dominantFields chooses, for each JSON name among cands, the field a
// decoder binds it to, as encoding/json does: the shallowest, then the
// tagged one; two at the same depth and taggedness are an error. The
// fields come back in struct order.
func dominantFields(cands []candidate, path string) ([]candidate, error) {
	flat := true // no embedded struct was flattened: all at depth 0
	for _, c := range cands {
		if c.depth > 0 {
			flat = false
			break
		}
	}
	if flat {
		// The common case needs no grouping or sorting when no two
		// fields share a name.
		if len(cands) <= 16 {
			// Comparing every pair costs less than a set this small.
		pairs:
			for i := range cands {
				for j := range i {
					if cands[i].name == cands[j].name {
						flat = false
						break pairs
					}
				}
			}
		} else {
			seen := make(map[string]struct{}, len(cands))
			for _, c := range cands {
				if _, dup := seen[c.name]; dup {
					flat = false
					break
				}
				seen[c.name] = struct{}{}
			}
		}
		if flat {
			return cands, nil
		}
	}
	byName := map[string][]candidate{}
	var order []string
	for _, c := range cands {
		if _, ok := byName[c.name]; !ok {
			order = append(order, c.name)
		}
		byName[c.name] = append(byName[c.name], c)
	}
	chosen := make([]candidate, 0, len(order))
	for _, name := range order {
		cs := byName[name]
		sort.SliceStable(cs, func(i, j int) bool {
			if cs[i].depth != cs[j].depth {
				return cs[i].depth < cs[j].depth
			}
			return cs[i].tagged && !cs[j].tagged
		})
		if len(cs) > 1 && cs[0].depth == cs[1].depth && cs[0].tagged == cs[1].tagged {
			return nil, ambiguousName(path, name, cs[0], cs[1])
		}
		chosen = append(chosen, cs[0])
	}
	sort.SliceStable(chosen, func(i, j int) bool { return lessIndex(chosen[i].index, chosen[j].index) })
	return chosen, nil
}

func ambiguousName(path, name string, a, b candidate) error {
	return errorf(joinPath(path, a.goName), "JSON name %q is ambiguous: fields %s and %s both have it at the same depth, so a decoder binds neither", name, a.goName, b.goName)
}

// structFields collects a struct's JSON properties the way encoding/json
// does: exported fields, json tag names, embedded structs flattened with
// the shallowest (then tagged) field winning.
func (b *builder) structFields(n *node, t reflect.Type, path string) error {
	// The candidates live only while this struct is built: for a struct
	// of a few fields they fit on the stack (2.4 KB a type on the heap
	// otherwise, about a quarter of what New allocates).
	var room [16]candidate
	cands := room[:0]
	if t.NumField() > len(room) {
		cands = make([]candidate, 0, t.NumField())
	}
	top := make([]int, t.NumField()) // index storage for the fields of t itself
	for i := range top {
		top[i] = i
	}
	type level struct {
		t      reflect.Type
		index  []int
		goName string
	}
	current := []level{{t: t}}
	visited := map[reflect.Type]bool{}
	for depth := 0; len(current) > 0; depth++ {
		var next []level
		for _, lv := range current {
			if visited[lv.t] {
				continue
			}
			visited[lv.t] = true
			for i := 0; i < lv.t.NumField(); i++ {
				sf := lv.t.Field(i)
				tag := jsonTag(sf.Tag)
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				var index []int
				if len(lv.index) == 0 {
					index = top[i : i+1 : i+1]
				} else {
					index = append(append(make([]int, 0, len(lv.index)+1), lv.index...), i)
				}
				goName := sf.Name
				if lv.goName != "" {
					goName = lv.goName + "." + sf.Name
				}
				ft := sf.Type
				if sf.Anonymous {
					et := ft
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
					if name == "" && et.Kind() == reflect.Struct && !implementsAny(et) && et != timeType {
						if ft.Kind() == reflect.Pointer && !sf.IsExported() {
							return errorf(joinPath(path, goName), "embedded pointer to unexported struct type %s cannot be set by a decoder", et)
						}
						next = append(next, level{t: et, index: index, goName: goName})
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tagged := name != ""
				if !validTagName(name) {
					tagged, name = false, ""
				}
				if name == "" {
					name = sf.Name
				}
				cands = append(cands, candidate{name: name, tagged: tagged, depth: depth, index: index, typ: sf.Type, tag: sf.Tag, field: sf.Name, goName: goName, opts: opts, owner: lv.t})
			}
		}
		current = next
	}
	chosen, err := dominantFields(cands, path)
	if err != nil {
		return err
	}

	n.doc = descriptionsOf(t)[""]
	if !b.opts.output {
		// Only the decoder looks fields up by name; an output schema is
		// rendered, never decoded.
		n.byName = make(map[string]*field, len(chosen))
	}
	fields := make([]field, len(chosen)) // one allocation for all of them
	n.fields = make([]*field, 0, len(chosen))
	docs := map[reflect.Type]map[string]string{}
	for i, c := range chosen {
		fpath := joinPath(path, c.goName)
		var tagStore tagSet
		tags := &tagStore
		readTags(tags, c.tag)
		cons, err := parseTags(tags)
		if err != nil {
			return errorf(fpath, "%v", err)
		}
		if cons.description == "" {
			// The struct that declares the field describes it, also when
			// the field is promoted from an embedded struct.
			d, ok := docs[c.owner]
			if !ok {
				d = descriptionsOf(c.owner)
				docs[c.owner] = d
			}
			cons.description = d[c.field]
		}
		optional := false
		stringOpt := false
		for rest := c.opts; rest != ""; {
			var o string
			o, rest, _ = strings.Cut(rest, ",")
			switch o {
			case "omitempty", "omitzero":
				optional = true
			case "string":
				stringOpt = true
			}
		}
		ft := c.typ
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Pointer {
			stringOpt = false // encoding/json honours ,string on T and *T only
		}
		if stringOpt && (implementsAny(deref(ft)) || deref(ft) == numberType) {
			return errorf(fpath, "the ,string option on a type that decodes itself is not supported; drop the option")
		}
		switch baseKind(ft) {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.Bool:
			if stringOpt && (cons.min != nil || cons.max != nil || cons.multipleOf > 0) {
				return errorf(fpath, "minimum, maximum and multipleOf cannot be stated for a number held in a string (the ,string option); drop the option or the tags")
			}
		case reflect.String:
			if stringOpt {
				return errorf(fpath, "the ,string option on a string field (a JSON string inside a string) is not supported; drop the option")
			}
		default:
			stringOpt = false // encoding/json honours ,string on these kinds only
		}
		asString := stringOpt || baseKind(ft) == reflect.String && !implementsAny(deref(ft)) && deref(ft) != numberType
		if d, ok := tags.Lookup("default"); ok {
			cons.def = valueTag(d, asString)
		}
		if e, ok := tags.Lookup("enum"); ok {
			items, err := splitList(e, asString)
			if err != nil {
				return errorf(fpath, "enum tag: %v", err)
			}
			cons.enum = items
		}
		if e, ok := tags.Lookup("examples"); ok {
			items, err := splitList(e, asString)
			if err != nil {
				return errorf(fpath, "examples tag: %v", err)
			}
			cons.examples = items
		}
		cp := &noConstraints
		if !cons.none() {
			cp = new(constraints)
			*cp = cons
		}
		u, err := b.typeUse(ft, cp, fpath)
		if err != nil {
			return err
		}
		if tag, kind := unusedKeyword(cp, derefUse(u).n); tag != "" {
			return errorf(fpath, "the %s tag does not apply to %s (a JSON %s), so it would check nothing; drop it, or state it where it applies (on an element's own type, with a JSONSchema method)", tag, ft, kind)
		}
		if arr := derefUse(u); arr.n.kind == kArray && (cons.minItems >= 0 && cons.minItems != arr.n.length || cons.maxItems >= 0 && cons.maxItems != arr.n.length) {
			return errorf(fpath, "minItems and maxItems tags cannot change the length of a fixed-size array of %d items; drop them or use a slice", arr.n.length)
		}
		if stringOpt {
			inner := u
			for inner.n.kind == kPointer {
				inner = inner.n.elem
			}
			switch inner.n.kind {
			case kInt, kUint, kFloat, kBool:
				inner.stringOpt = true
			default:
				// encoding/json ignores ,string on other kinds too.
			}
		}
		f := &fields[i]
		*f = field{name: c.name, goName: c.goName, index: c.index, u: u, bit: uint(i)}
		f.required = !optional && ft.Kind() != reflect.Pointer && cons.def == nil
		if b.opts.output {
			f.required = !optional
		}
		if cons.def != nil && !b.opts.output {
			b.defaults = append(b.defaults, pendingField{f: f, path: fpath})
		}
		n.fields = append(n.fields, f)
		if n.byName != nil {
			n.byName[f.name] = f
		}
	}
	return nil
}

// jsonTag returns sf.Tag.Get("json"). Most tags begin with a plain json
// tag, which it reads without StructTag's parse of the whole tag (about a
// tenth of New's time otherwise); any other tag goes to StructTag.Get.
func jsonTag(tag reflect.StructTag) string {
	const prefix = `json:"`
	s := string(tag)
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return tag.Get("json")
	}
	for i := len(prefix); i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[len(prefix):i]
		case c < 0x20 || c >= 0x7f || c == '\\':
			return tag.Get("json") // escapes, or what Unquote refuses
		}
	}
	return tag.Get("json") // no closing quote
}

// descriptionsOf returns the descriptions a struct type supplies through
// its FieldDescriptions method, or nil.
// A method promoted from an embedded struct describes that struct, not t,
// so it is ignored.
func descriptionsOf(t reflect.Type) map[string]string {
	if !factsOf(t).describer {
		return nil
	}
	docs := reflect.New(t).Interface().(fieldDescriber).FieldDescriptions()
	for i := range t.NumField() {
		if f := t.Field(i); f.Anonymous && deref(f.Type).Kind() == reflect.Struct {
			if inner := descriptionsOf(deref(f.Type)); inner != nil && reflect.DeepEqual(inner, docs) {
				return nil
			}
		}
	}
	return docs
}

func lessIndex(a, b []int) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// derefUse returns the use a pointer use points to, through every pointer.
// unusedKeyword returns the first keyword tag of c that a value of n's
// kind does not carry, and what n's values are in JSON; "" when every tag
// applies. Such a tag was dropped: a pattern on a []string checked none of
// its strings, a minimum on a string nothing.
func unusedKeyword(c *constraints, n *node) (tag, kind string) {
	if c == &noConstraints {
		return "", ""
	}
	num, str, arr, obj := false, false, false, false
	kind = "value"
	switch n.kind {
	case kInt, kUint, kFloat, kNumber:
		num, kind = true, "number"
	case kString:
		str, kind = true, "string"
	case kSlice, kArray:
		arr, kind = true, "array"
	case kMap:
		obj, kind = true, "object"
	case kStruct:
		kind = "object"
	case kBool:
		kind = "boolean"
	case kBytes, kTime, kText:
		kind = "string"
	}
	switch {
	case !num && c.min != nil:
		return boundKey("minimum", c.min.exclusive), kind
	case !num && c.max != nil:
		return boundKey("maximum", c.max.exclusive), kind
	case !num && c.multipleOf > 0:
		return "multipleOf", kind
	case !str && c.minLength >= 0:
		return "minLength", kind
	case !str && c.maxLength >= 0:
		return "maxLength", kind
	case !str && c.pattern != nil:
		return "pattern", kind
	case !str && c.format != "" && !(n.kind == kTime && c.format == "date-time"):
		return "format", kind
	case !arr && c.minItems >= 0:
		return "minItems", kind
	case !arr && c.maxItems >= 0:
		return "maxItems", kind
	case !arr && c.uniqueItems:
		return "uniqueItems", kind
	case !obj && c.minProps >= 0:
		return "minProperties", kind
	case !obj && c.maxProps >= 0:
		return "maxProperties", kind
	}
	return "", ""
}

func derefUse(u *use) *use {
	for u.n.kind == kPointer {
		u = u.n.elem
	}
	return u
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func baseKind(t reflect.Type) reflect.Kind { return deref(t).Kind() }

// validTagName reports whether encoding/json accepts name as a key name.
func validTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c > 127:
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^{|}~ ", c):
		default:
			// Backslash, quotes, comma, control characters.
			return false
		}
	}
	return true
}
