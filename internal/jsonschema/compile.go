package jsonschema

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// A SchemaError reports a problem in a schema document: a keyword this
// package does not support, a keyword with a malformed value, a reference
// it cannot resolve, or a structure it refuses to evaluate.
type SchemaError struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending location in
	// the schema document; "" is the document itself.
	Pointer string
	// Msg says what is wrong, in plain words.
	Msg string
}

// Error formats the error as "invalid schema at POINTER: MESSAGE".
func (e *SchemaError) Error() string {
	if e.Pointer == "" {
		return "invalid schema: " + e.Msg
	}
	return "invalid schema at " + e.Pointer + ": " + e.Msg
}

// Type bits.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeNames = []struct {
	name string
	bit  uint8
}{
	{"null", tNull}, {"boolean", tBoolean}, {"object", tObject}, {"array", tArray},
	{"number", tNumber}, {"integer", tInteger}, {"string", tString},
}

// Asserted formats.
const (
	fNone uint8 = iota
	fDateTime
	fDate
	fTime
	fEmail
	fUUID
	fIPv4
	fIPv6
	fURI
)

var formats = map[string]uint8{
	"date-time": fDateTime, "date": fDate, "time": fTime, "email": fEmail,
	"uuid": fUUID, "ipv4": fIPv4, "ipv6": fIPv6, "uri": fURI,
}

type prop struct {
	name string
	n    *node
}

type patternProp struct {
	src string
	re  *pattern
	n   *node
}

type depRequired struct {
	prop string
	req  []string
}

type depSchema struct {
	prop string
	n    *node
}

// A node is one compiled schema. Absent keywords have zero values (or -1
// for the counting keywords), so evaluation tests cheap fields only.
type node struct {
	loc string // JSON pointer of the schema in the document

	boolean bool // a boolean schema: accept is its value
	accept  bool

	types uint8 // 0: any

	enum     []*jval
	enumSet  map[string]struct{} // for long enums of strings only
	hasConst bool
	constVal *jval

	// objects
	props        []prop
	propIndex    map[string]*node  // when there are many properties
	foldIndex    map[string]string // folded name to name, with propIndex
	required     []string
	reqIndex     map[string]int
	additional   *node
	patternProps []patternProp
	propNames    *node
	minProps     int64
	maxProps     int64
	depRequired  []depRequired
	depSchemas   []depSchema

	// arrays
	prefixItems []*node
	items       *node
	minItems    int64
	maxItems    int64
	unique      bool
	contains    *node
	minContains int64
	maxContains int64

	// evaluated by the external validator only; here for the checks of
	// Compile
	unevalProps, unevalItems *node

	// strings
	minLen     int64
	maxLen     int64
	pattern    *pattern
	patternSrc string
	format     uint8
	formatName string

	// numbers
	minimum, maximum, exclMin, exclMax, multipleOf *number

	// applicators at the same instance location
	ref                 *node
	refStr              string
	dynRef              []*node // $dynamicRef: every schema it may resolve to
	allOf, anyOf, oneOf []*node
	not                 *node
	ifN, thenN, elseN   *node

	def []byte // the "default" value, compact; nil when absent

	onlyRef bool // the schema is {"$ref": ...} plus annotations

	mark uint8 // checkInPlace: 1 while visiting, 2 when done

	// Where defaults can apply, so that Validate skips the rest.
	reachMark  uint8   // markDefaults: 1 while visiting, 2 when done
	defHere    bool    // a property schema has a default
	defProps   []int32 // the props whose schema has a default
	childReach bool    // a property or item schema has defReach
	defReach   bool    // defHere or childReach, here or in place
	fan        int32   // checkInPlace: subschemas applied at one location
	id         int32   // checkInPlace: index in the order it returns
}

func (n *node) prop(key []byte) *node {
	if n.propIndex != nil {
		return n.propIndex[string(key)]
	}
	for i := range n.props {
		if n.props[i].name == string(key) {
			return n.props[i].n
		}
	}
	return nil
}

func (n *node) requiredIndex(key []byte) int {
	if n.reqIndex != nil {
		if i, ok := n.reqIndex[string(key)]; ok {
			return i
		}
		return -1
	}
	for i, r := range n.required {
		if r == string(key) {
			return i
		}
	}
	return -1
}

type pendingRef struct {
	n       *node
	ref     string
	base    string // the base URI the reference is resolved against
	dynamic bool   // a $dynamicRef
}

type compiler struct {
	opts    Options
	root    *jval
	slab    []node // nodes are allocated in chunks
	pending []pendingRef
	reBytes int
	nodes   []*node
	res     resources
	fanout  float64 // for the external validator: see checkGrowth
}

// Compile compiles a JSON Schema (draft 2020-12) document written for
// this program, as CompileWith does with formats asserted and patterns
// that cannot be translated to RE2 refused. The root may be any schema;
// callers that need an object schema check that themselves.
//
// It returns a *SchemaError for a keyword with a malformed value, a
// pattern it cannot translate, a reference it cannot resolve, or a $ref
// cycle that would apply schemas to the same value forever. Documents
// that are not strict JSON give a *SchemaError wrapping the syntax error.
// Documents over MaxSchemaBytes or nested deeper than MaxSchemaDepth are
// refused.
func Compile(doc []byte) (*Schema, error) {
	return CompileWith(doc, Options{AssertFormat: true, StrictPatterns: true})
}

// CompileWith compiles a JSON Schema document as opts say; see the
// package documentation for schemas from elsewhere. Errors are those of
// Compile.
func CompileWith(doc []byte, opts Options) (*Schema, error) {
	var c compiler
	if err := c.compileDoc(doc, opts); err != nil {
		return nil, err
	}
	rn := c.root.node
	if c.res.external != "" {
		// Keywords this package does not evaluate itself: the checks above
		// bound the work, and the other validator does it.
		if len(c.nodes) > maxExternalNodes {
			return nil, &SchemaError{Pointer: c.res.externalLoc, Msg: fmt.Sprintf("the schema uses %s, which the external validator evaluates, and has more than %d subschemas: that validator's compiler works in time that grows with their square (20,000 took 8 s)",
				c.res.external, maxExternalNodes)}
		}
		ext, err := c.compileExternal()
		if err != nil {
			return nil, err
		}
		// Each pattern weighs what it reads a byte for: its program's
		// size counts, as for this package's own matches (matchWork).
		patterns := 0
		for _, n := range c.nodes {
			for _, pp := range n.patternProps {
				patterns += extPatternWeight(pp.re)
			}
			if n.pattern != nil {
				patterns += extPatternWeight(n.pattern)
			}
		}
		return &Schema{root: rn, ext: ext, extFanout: c.fanout, extPatterns: patterns, extNames: propertyNames(c.nodes), ignored: c.res.ignored}, nil
	}
	// A default that its own schema rejects would make every call that
	// omits the property invalid; leave such defaults out.
	defaults, defaultBytes := false, 0
	var valid map[string]bool
	for _, n := range c.nodes {
		if n.def != nil {
			if validates(n, n.def) {
				defaults = true
				defaultBytes += len(n.def)
				if valid == nil {
					valid = make(map[string]bool)
				}
				valid[n.loc] = true
			} else {
				n.def = nil
			}
		}
	}
	if defaults {
		markDefaults(rn, 0)
	}
	return &Schema{root: rn, defaults: defaults, defaultBytes: defaultBytes, validDefaults: valid, ignored: c.res.ignored}, nil
}

// compileDoc parses and compiles doc, resolving references and checking
// the work the schema can cause; the schema's root is then c.root.node.
func (c *compiler) compileDoc(doc []byte, opts Options) error {
	root, schemas, err := parseDoc(doc)
	if err != nil {
		if _, ok := err.(*SchemaError); ok {
			return err
		}
		return &SchemaError{Msg: "not valid JSON: " + err.Error()}
	}
	*c = compiler{opts: opts, root: root, slab: make([]node, 0, min(schemas, 256)), nodes: make([]*node, 0, min(schemas, 256))}
	c.res.init(root, doc)
	rn, err := c.compile(root, "")
	if err != nil {
		return err
	}
	for len(c.pending) > 0 {
		pr := c.pending[len(c.pending)-1]
		c.pending = c.pending[:len(c.pending)-1]
		target, err := c.resolve(pr)
		if err != nil {
			return err
		}
		if pr.dynamic {
			pr.n.dynRef = append(pr.n.dynRef, target)
		} else {
			pr.n.ref = target
		}
	}
	c.linkDynamic()
	order, err := checkInPlace(c.nodes)
	if err != nil {
		return err
	}
	if c.fanout, err = checkGrowth(order, rn, c.res.external != ""); err != nil {
		return err
	}
	return nil
}

func (c *compiler) errf(loc, format string, args ...any) error {
	return &SchemaError{Pointer: loc, Msg: fmt.Sprintf(format, args...)}
}

// at returns the location of keyword key of the schema at loc.
func at(loc, key string) string { return loc + "/" + escapeToken(key) }

func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// compile compiles the schema v found at loc.
func (c *compiler) compile(v *jval, loc string) (*node, error) {
	if v.node != nil {
		return v.node, nil
	}
	if len(c.slab) == cap(c.slab) {
		c.slab = make([]node, 0, 64)
	}
	c.slab = append(c.slab, node{loc: loc, minProps: -1, maxProps: -1, minItems: -1, maxItems: -1,
		minContains: -1, maxContains: -1, minLen: -1, maxLen: -1})
	n := &c.slab[len(c.slab)-1]
	v.node = n
	c.nodes = append(c.nodes, n)
	switch v.kind {
	case kTrue, kFalse:
		n.boolean, n.accept = true, v.kind == kTrue
		return n, nil
	case kObject:
	default:
		return nil, c.errf(loc, "a schema must be an object or a boolean, not %s", kindWord(v.kind))
	}
	// An $id starts a resource with its own base URI for the schemas in it.
	if id, ok := v.get("$id"); ok && id.kind == kString && !strings.HasPrefix(id.s, "#") {
		outer := c.res.base
		if err := c.res.enter(v, id.s); err != nil {
			return nil, c.errf(at(loc, "$id"), "%v", err)
		}
		defer func() { c.res.base = outer }()
	}
	sub := func(key string, sv *jval) (*node, error) {
		return c.compile(sv, loc+"/"+escapeToken(key))
	}
	var itemsArray *jval
	var additionalItems *jval
	var exclMinBool, exclMaxBool bool
	skipPatterns := false // a patternProperties pattern is ignored
	annotationsOnly := true
	for _, m := range v.members {
		key, kv := m.key, m.val
		var err error
		switch key {
		case "$schema":
			if kv.kind == kString && !knownDialect(kv.s) {
				// A custom meta-schema may turn vocabularies off.
				c.res.needExternal(at(loc, key), "its meta-schema "+quote(shorten(kv.s, 80)))
				if err := c.loadMeta(kv.s, at(loc, key)); err != nil {
					return nil, err
				}
			}
			continue
		case "$comment", "title", "description", "examples", "deprecated", "readOnly", "writeOnly",
			"contentEncoding", "contentMediaType", "contentSchema", "$vocabulary", "$recursiveAnchor", "discriminator",
			"nullable", "x-nullable":
			continue
		case "$id":
			if kv.kind != kString {
				return nil, c.errf(at(loc, key), `"$id" must be a string`)
			}
			if strings.HasPrefix(kv.s, "#") && kv.s != "#" { // a draft 7 anchor
				c.res.addAnchor(strings.TrimPrefix(kv.s, "#"), v, false)
			}
			continue
		case "$anchor", "$dynamicAnchor":
			if kv.kind != kString || kv.s == "" {
				return nil, c.errf(at(loc, key), "%q must be a non-empty string", key)
			}
			c.res.addAnchor(kv.s, v, key == "$dynamicAnchor")
			continue
		case "default":
			n.def = compact(kv.raw)
			continue
		case "$recursiveRef":
			return nil, c.errf(at(loc, key), "keyword %q (draft 2019-09) is not supported; use $dynamicRef", key)
		case "$dynamicRef":
			if kv.kind != kString {
				return nil, c.errf(at(loc, key), `"$dynamicRef" must be a string`)
			}
			c.res.needExternal(at(loc, key), "$dynamicRef")
			c.pending = append(c.pending, pendingRef{n: n, ref: kv.s, base: c.res.base, dynamic: true})
			continue
		case "unevaluatedProperties", "unevaluatedItems":
			un, err := c.compile(kv, at(loc, key))
			if err != nil {
				return nil, err
			}
			if key == "unevaluatedProperties" {
				n.unevalProps = un
			} else {
				n.unevalItems = un
			}
			c.res.needExternal(at(loc, key), key)
			continue
		case "$defs", "definitions":
			if kv.kind != kObject {
				return nil, c.errf(at(loc, key), "%q must be an object", key)
			}
			for _, d := range kv.members {
				if _, err := c.compile(d.val, loc+"/"+key+"/"+escapeToken(d.key)); err != nil {
					return nil, err
				}
			}
			continue
		}
		switch key {
		case "$ref":
			if kv.kind != kString {
				return nil, c.errf(at(loc, key), `"$ref" must be a string`)
			}
			n.refStr = kv.s
			c.pending = append(c.pending, pendingRef{n: n, ref: kv.s, base: c.res.base})
			continue
		case "type":
			n.types, err = c.types(kv, at(loc, key))
		case "enum":
			if kv.kind != kArray {
				return nil, c.errf(at(loc, key), `"enum" must be an array`)
			}
			n.enum = kv.elems
			if n.enum == nil {
				n.enum = []*jval{}
			}
			n.enumSet = stringSet(n.enum)
		case "const":
			n.hasConst, n.constVal = true, kv
		case "properties":
			if kv.kind != kObject {
				return nil, c.errf(at(loc, key), `"properties" must be an object`)
			}
			for _, pm := range kv.members {
				name := pm.key
				pn, err := c.compile(pm.val, loc+"/"+key+"/"+escapeToken(name))
				if err != nil {
					return nil, err
				}
				n.props = append(n.props, prop{name: name, n: pn})
			}
			if len(n.props) > 8 {
				n.propIndex = make(map[string]*node, len(n.props))
				for _, p := range n.props {
					n.propIndex[p.name] = p.n
				}
				n.foldIndex = foldIndex(n.props)
			}
		case "required":
			if n.required, err = c.strings(kv, at(loc, key)); err != nil {
				return nil, err
			}
			if len(n.required) > 8 {
				n.reqIndex = make(map[string]int, len(n.required))
				for i, r := range n.required {
					n.reqIndex[r] = i
				}
			}
		case "additionalProperties":
			n.additional, err = sub(key, kv)
		case "patternProperties":
			if kv.kind != kObject {
				return nil, c.errf(at(loc, key), `"patternProperties" must be an object`)
			}
			for _, pm := range kv.members {
				src := pm.key
				ploc := at(loc, key) + "/" + escapeToken(src)
				re, err := c.regexp(src, ploc)
				if err != nil {
					return nil, err
				}
				pn, err := c.compile(pm.val, ploc)
				if err != nil {
					return nil, err
				}
				if re == nil {
					skipPatterns = true
				}
				n.patternProps = append(n.patternProps, patternProp{src: src, re: re, n: pn})
			}
		case "propertyNames":
			n.propNames, err = sub(key, kv)
		case "minProperties":
			n.minProps, err = c.count(kv, at(loc, key), key)
		case "maxProperties":
			n.maxProps, err = c.count(kv, at(loc, key), key)
		case "dependentRequired":
			err = c.dependentRequired(n, kv, at(loc, key))
		case "dependentSchemas":
			err = c.dependentSchemas(n, kv, at(loc, key))
		case "dependencies":
			if kv.kind != kObject {
				return nil, c.errf(at(loc, key), `"dependencies" must be an object`)
			}
			for _, dm := range kv.members {
				name, dv := dm.key, dm.val
				dloc := at(loc, key) + "/" + escapeToken(name)
				if dv.kind == kArray {
					req, err := c.strings(dv, dloc)
					if err != nil {
						return nil, err
					}
					n.depRequired = append(n.depRequired, depRequired{prop: name, req: req})
					continue
				}
				dn, err := c.compile(dv, dloc)
				if err != nil {
					return nil, err
				}
				n.depSchemas = append(n.depSchemas, depSchema{prop: name, n: dn})
			}
		case "prefixItems":
			n.prefixItems, err = c.schemaArray(kv, at(loc, key), key)
		case "items":
			if kv.kind == kArray { // draft 7 tuple form
				itemsArray = kv
				n.prefixItems, err = c.schemaArray(kv, at(loc, key), key)
			} else {
				n.items, err = sub(key, kv)
			}
		case "additionalItems":
			additionalItems = kv
		case "minItems":
			n.minItems, err = c.count(kv, at(loc, key), key)
		case "maxItems":
			n.maxItems, err = c.count(kv, at(loc, key), key)
		case "uniqueItems":
			if kv.kind != kTrue && kv.kind != kFalse {
				return nil, c.errf(at(loc, key), `"uniqueItems" must be true or false`)
			}
			n.unique = kv.kind == kTrue
		case "contains":
			n.contains, err = sub(key, kv)
		case "minContains":
			n.minContains, err = c.count(kv, at(loc, key), key)
		case "maxContains":
			n.maxContains, err = c.count(kv, at(loc, key), key)
		case "minLength":
			n.minLen, err = c.count(kv, at(loc, key), key)
		case "maxLength":
			n.maxLen, err = c.count(kv, at(loc, key), key)
		case "pattern":
			if kv.kind != kString {
				return nil, c.errf(at(loc, key), `"pattern" must be a string`)
			}
			n.patternSrc = kv.s
			n.pattern, err = c.regexp(kv.s, at(loc, key))
			if err == nil && n.pattern == nil {
				n.patternSrc = ""
				continue
			}
		case "format":
			if kv.kind != kString {
				return nil, c.errf(at(loc, key), `"format" must be a string`)
			}
			if !c.opts.AssertFormat {
				continue // an annotation only (the draft 2020-12 default)
			}
			n.format, n.formatName = formats[kv.s], kv.s
			if n.format == fNone {
				continue // an annotation only
			}
		case "minimum":
			n.minimum, err = c.number(kv, at(loc, key), key)
		case "maximum":
			n.maximum, err = c.number(kv, at(loc, key), key)
		case "exclusiveMinimum":
			if kv.kind == kTrue || kv.kind == kFalse { // draft 4
				exclMinBool = kv.kind == kTrue
			} else {
				n.exclMin, err = c.number(kv, at(loc, key), key)
			}
		case "exclusiveMaximum":
			if kv.kind == kTrue || kv.kind == kFalse {
				exclMaxBool = kv.kind == kTrue
			} else {
				n.exclMax, err = c.number(kv, at(loc, key), key)
			}
		case "multipleOf":
			n.multipleOf, err = c.number(kv, at(loc, key), key)
			if err == nil && n.multipleOf.d.sign() <= 0 {
				err = c.errf(at(loc, key), `"multipleOf" must be greater than 0`)
			}
		case "allOf":
			n.allOf, err = c.schemaList(kv, at(loc, key), key)
		case "anyOf":
			n.anyOf, err = c.schemaList(kv, at(loc, key), key)
		case "oneOf":
			n.oneOf, err = c.schemaList(kv, at(loc, key), key)
		case "not":
			n.not, err = sub(key, kv)
		case "if":
			n.ifN, err = sub(key, kv)
		case "then":
			n.thenN, err = sub(key, kv)
		case "else":
			n.elseN, err = sub(key, kv)
		default:
			continue // an unknown keyword: an annotation or a vendor extension
		}
		if err != nil {
			return nil, err
		}
		annotationsOnly = false
	}
	n.onlyRef = n.refStr != "" && annotationsOnly
	if skipPatterns {
		// Which keys the patterns match is unknown, so which keys are
		// additional is too: ignore both keywords.
		n.patternProps, n.additional = nil, nil
		c.res.ignore(at(loc, "patternProperties"), "patternProperties and additionalProperties are ignored: a pattern cannot be translated to RE2")
	}
	if itemsArray != nil && additionalItems != nil {
		an, err := c.compile(additionalItems, loc+"/additionalItems")
		if err != nil {
			return nil, err
		}
		n.items = an
	}
	if exclMinBool && n.minimum != nil {
		n.exclMin, n.minimum = n.minimum, nil
	}
	if exclMaxBool && n.maximum != nil {
		n.exclMax, n.maximum = n.maximum, nil
	}
	if n.ifN == nil { // then and else without if have no effect
		n.thenN, n.elseN = nil, nil
	}
	if n.contains == nil {
		n.minContains, n.maxContains = -1, -1
	}
	return n, nil
}

// markDefaults sets the default-reach flags of n and of the schemas below
// it. A schema met again while it is being visited (recursion) is taken
// to reach defaults, which costs only some pruning.
func markDefaults(n *node, depth int) bool {
	switch n.reachMark {
	case 1:
		return true
	case 2:
		return n.defReach
	}
	if depth > 10_000 {
		return true
	}
	n.reachMark = 1
	for j, p := range n.props {
		if defaultOf(p.n) != nil {
			n.defHere = true
			n.defProps = append(n.defProps, int32(j))
		}
		if markDefaults(p.n, depth+1) {
			n.childReach = true
		}
	}
	for _, m := range n.prefixItems {
		if markDefaults(m, depth+1) {
			n.childReach = true
		}
	}
	if n.items != nil && markDefaults(n.items, depth+1) {
		n.childReach = true
	}
	r := n.defHere || n.childReach
	_ = eachInPlace(n, func(m *node) error {
		if markDefaults(m, depth+1) {
			r = true
		}
		return nil
	})
	n.defReach = r
	n.reachMark = 2
	return r
}

// stringSet returns the set of the values of a long enum of strings, or
// nil.
func stringSet(enum []*jval) map[string]struct{} {
	if len(enum) <= 16 {
		return nil
	}
	set := make(map[string]struct{}, len(enum))
	for _, e := range enum {
		if e.kind != kString {
			return nil
		}
		set[e.s] = struct{}{}
	}
	return set
}

func kindWord(k uint8) string {
	switch k {
	case kObject:
		return "an object"
	case kArray:
		return "an array"
	case kString:
		return "a string"
	case kNumber:
		return "a number"
	case kTrue, kFalse:
		return "a boolean"
	}
	return "null"
}

func (c *compiler) types(v *jval, loc string) (uint8, error) {
	one := func(e *jval, loc string) (uint8, error) {
		if e.kind == kString {
			for _, t := range typeNames {
				if t.name == e.s {
					return t.bit, nil
				}
			}
		}
		return 0, c.errf(loc, `unknown type %s; the types are null, boolean, object, array, number, integer and string`, shortJSON(e.raw, 40))
	}
	if v.kind != kArray {
		return one(v, loc)
	}
	var bits uint8
	for i, e := range v.elems {
		b, err := one(e, loc+"/"+strconv.Itoa(i))
		if err != nil {
			return 0, err
		}
		bits |= b
	}
	if bits == 0 {
		return 0, c.errf(loc, `"type" must not be an empty array`)
	}
	return bits, nil
}

func (c *compiler) strings(v *jval, loc string) ([]string, error) {
	if v.kind != kArray {
		return nil, c.errf(loc, "must be an array of strings")
	}
	out := make([]string, 0, len(v.elems))
	for i, e := range v.elems {
		if e.kind != kString {
			return nil, c.errf(loc+"/"+strconv.Itoa(i), "must be a string")
		}
		for _, prev := range out {
			if prev == e.s {
				return nil, c.errf(loc+"/"+strconv.Itoa(i), "%s is listed twice", quote(shorten(e.s, gotWidth)))
			}
			if len(out) > 64 {
				break // large lists: duplicates are harmless
			}
		}
		out = append(out, e.s)
	}
	return out, nil
}

func (c *compiler) count(v *jval, loc, key string) (int64, error) {
	if v.kind == kNumber {
		d := parseDecimal([]byte(v.s), nil)
		if d.isInteger() && !d.neg {
			if len(d.digits)+int(d.exp) > 15 {
				return math.MaxInt64 / 2, nil
			}
			n, err := strconv.ParseFloat(v.s, 64)
			if err == nil {
				return int64(n), nil
			}
		}
		if d.isZero() {
			return 0, nil
		}
	}
	return 0, c.errf(loc, "%q must be a non-negative integer", key)
}

func (c *compiler) number(v *jval, loc, key string) (*number, error) {
	if v.kind != kNumber {
		return nil, c.errf(loc, "%q must be a number", key)
	}
	n := newNumber(v.s)
	return &n, nil
}

func (c *compiler) schemaArray(v *jval, loc, key string) ([]*node, error) {
	if v.kind != kArray {
		return nil, c.errf(loc, "%q must be an array of schemas", key)
	}
	out := make([]*node, len(v.elems))
	for i, e := range v.elems {
		n, err := c.compile(e, loc+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *compiler) schemaList(v *jval, loc, key string) ([]*node, error) {
	if v.kind != kArray || len(v.elems) == 0 {
		return nil, c.errf(loc, "%q must be a non-empty array of schemas", key)
	}
	return c.schemaArray(v, loc, key)
}

func (c *compiler) dependentRequired(n *node, v *jval, loc string) error {
	if v.kind != kObject {
		return c.errf(loc, `"dependentRequired" must be an object`)
	}
	for _, m := range v.members {
		name := m.key
		req, err := c.strings(m.val, loc+"/"+escapeToken(name))
		if err != nil {
			return err
		}
		n.depRequired = append(n.depRequired, depRequired{prop: name, req: req})
	}
	return nil
}

func (c *compiler) dependentSchemas(n *node, v *jval, loc string) error {
	if v.kind != kObject {
		return c.errf(loc, `"dependentSchemas" must be an object`)
	}
	for _, m := range v.members {
		name := m.key
		dn, err := c.compile(m.val, loc+"/"+escapeToken(name))
		if err != nil {
			return err
		}
		n.depSchemas = append(n.depSchemas, depSchema{prop: name, n: dn})
	}
	return nil
}

// regexpCache keeps compiled patterns across Compile calls: registries
// compile many schemas that share patterns, and a *regexp.Regexp is safe
// for concurrent use. It keeps short patterns with small programs only
// (a 13-byte pattern can be a program of 16,000 instructions) and stops growing at
// regexpCacheMax entries, so schemas from a hostile server cannot make it
// hold much memory.
var (
	regexpCache  sync.Map // string → *pattern
	regexpCached atomic.Int32
)

const (
	regexpCacheMax    = 1024
	regexpCacheMaxLen = 256
)

// regexp compiles pattern src, found at loc, after translating the
// JavaScript syntax it may use (see translatePattern). A pattern that
// cannot be translated is an error with StrictPatterns and otherwise
// ignored: regexp records why and returns nil. A pattern whose program
// would pass maxPatternInsts, or take the schema's programs past
// maxTotalPatterns instructions, is always an error.
func (c *compiler) regexp(src, loc string) (*pattern, error) {
	if re, ok := regexpCache.Load(src); ok {
		return re.(*pattern), nil
	}
	if len(src) > maxPatternBytes {
		return nil, c.errf(loc, "the pattern is longer than %d bytes", maxPatternBytes)
	}
	t, err := translateAll(src)
	// The RE2 text counts: translated classes such as \s are longer.
	if err == nil {
		c.reBytes += max(len(src), t.size())
	} else {
		c.reBytes += len(src)
	}
	if c.reBytes > maxTotalPatterns {
		return nil, c.errf(loc, "the patterns add up to more than %d bytes", maxTotalPatterns)
	}
	var re *pattern
	if err == nil {
		re, err = t.compile(src)
	}
	if err == nil {
		// The programs count against the bound too: a counted
		// repetition makes a short pattern a large program.
		c.reBytes += re.insts - min(re.insts, max(len(src), t.size()))
		if c.reBytes > maxTotalPatterns {
			return nil, c.errf(loc, "the patterns' programs add up to more than %d instructions", maxTotalPatterns)
		}
	}
	if err != nil {
		msg := fmt.Sprintf("pattern %s is not supported: %v", quote(shorten(src, 80)), err)
		if errors.Is(err, errTooLarge) {
			return nil, c.errf(loc, "pattern %s is not supported: %v", quote(shorten(src, 80)), err)
		}
		if c.opts.StrictPatterns {
			return nil, c.errf(loc, "%s", msg)
		}
		c.res.ignore(loc, msg+"; the keyword is ignored")
		return nil, nil
	}
	if len(src) <= regexpCacheMaxLen && re.insts <= 2*regexpCacheMaxLen && regexpCached.Add(1) <= regexpCacheMax {
		regexpCache.Store(src, re)
	}
	return re, nil
}

// checkInPlace refuses schemas whose in-place applicators ($ref, allOf,
// anyOf, oneOf, not, if/then/else, dependentSchemas) form a cycle, which
// would apply schemas to one value forever, or fan out so far that one
// value would be checked against too many schemas.
func checkInPlace(nodes []*node) (order []*node, err error) {
	order = make([]*node, 0, len(nodes))
	stack := make([]*node, 0, 16)
	var visit func(n *node) error
	visit = func(n *node) error {
		switch n.mark {
		case 1:
			// a cycle: report it from where it starts
			i := len(stack) - 1
			for i > 0 && stack[i] != n {
				i--
			}
			var locs []string
			for _, m := range stack[i:] {
				locs = append(locs, pointerOrRoot(m.loc))
			}
			locs = append(locs, pointerOrRoot(n.loc))
			return &SchemaError{Pointer: n.loc, Msg: "the schema refers to itself without moving into the value (" +
				strings.Join(locs, " → ") + "), so checking a value would never end"}
		case 2:
			return nil
		}
		if len(stack) >= maxInPlaceDepth {
			return &SchemaError{Pointer: n.loc, Msg: fmt.Sprintf("more than %d subschemas chained through $ref, allOf, anyOf, oneOf, not or if at one location", maxInPlaceDepth)}
		}
		n.mark = 1
		stack = append(stack, n)
		total := 1
		err := eachInPlace(n, func(m *node) error {
			if err := visit(m); err != nil {
				return err
			}
			total += int(m.fan)
			if total > maxInPlaceCount {
				total = maxInPlaceCount + 1
			}
			return nil
		})
		if err != nil {
			return err
		}
		// A $dynamicRef resolves to one of its targets.
		most := 0
		for _, m := range n.dynRef {
			if err := visit(m); err != nil {
				return err
			}
			most = max(most, int(m.fan))
		}
		total = min(total+most, maxInPlaceCount+1)
		if total > maxInPlaceCount {
			return &SchemaError{Pointer: n.loc, Msg: fmt.Sprintf("the schema applies more than %d subschemas to one value", maxInPlaceCount)}
		}
		stack = stack[:len(stack)-1]
		n.mark = 2
		n.fan = int32(total)
		n.id = int32(len(order))
		order = append(order, n)
		return nil
	}
	for _, n := range nodes {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Bounds of checkGrowth.
const (
	growthDepth = 64  // instance depths checked
	growthLimit = 1e9 // subschema applications to one value
)

// checkGrowth refuses schemas whose work grows exponentially with the
// depth of the instance, such as {"$defs":{"t":{"allOf":[{"$ref":"#/$defs/u"},
// {"$ref":"#/$defs/u"}]},"u":{"items":{"$ref":"#/$defs/t"}}}}, which
// applies 2^k schemas to a value k arrays deep.
//
// It bounds, for each depth k, how many schemas can apply to one value k
// levels into the instance: E_0 is a schema's in-place fan-out, and E_k
// sums over the schemas applied in place the larger of what one object
// member or one array item receives at depth k-1. The bound assumes that
// every alternative is tried, so it is checked against a generous limit.
// order lists the nodes with in-place children first (from checkInPlace).
//
// With all set it also returns, for schemas that are not recursive too,
// the most schemas applied to one value at any depth up to growthDepth.
func checkGrowth(order []*node, root *node, all bool) (most float64, err error) {
	recursive := false
	for _, n := range order {
		if n.ref != nil || n.dynRef != nil {
			recursive = true
			break
		}
	}
	if !recursive && !all {
		return 0, nil // a tree: the work is bounded by its size
	}
	most = float64(root.fan)
	prev := make([]float64, len(order))
	cur := make([]float64, len(order))
	objSum := make([]float64, len(order))
	arrSum := make([]float64, len(order))
	for i, n := range order {
		prev[i] = float64(n.fan)
	}
	for k := 1; k <= growthDepth; k++ {
		for i, n := range order {
			obj, arr := 0.0, 0.0
			if !n.boolean {
				var best float64
				for _, p := range n.props {
					best = max(best, prev[p.n.id])
				}
				if n.additional != nil {
					best = max(best, prev[n.additional.id])
				}
				obj = best
				for _, pp := range n.patternProps {
					obj += prev[pp.n.id]
				}
				for _, m := range n.prefixItems {
					arr = max(arr, prev[m.id])
				}
				if n.items != nil {
					arr = max(arr, prev[n.items.id])
				}
				if n.contains != nil {
					arr += prev[n.contains.id]
				}
				if n.unevalProps != nil {
					obj += prev[n.unevalProps.id]
				}
				if n.unevalItems != nil {
					arr += prev[n.unevalItems.id]
				}
			}
			_ = eachInPlace(n, func(m *node) error {
				obj += objSum[m.id]
				arr += arrSum[m.id]
				return nil
			})
			var dynObj, dynArr float64 // a $dynamicRef resolves to one of its targets
			for _, m := range n.dynRef {
				dynObj, dynArr = max(dynObj, objSum[m.id]), max(dynArr, arrSum[m.id])
			}
			obj, arr = obj+dynObj, arr+dynArr
			objSum[i], arrSum[i] = obj, arr
			cur[i] = max(obj, arr)
		}
		most = max(most, cur[root.id])
		if cur[root.id] > growthLimit {
			return 0, &SchemaError{Pointer: root.loc, Msg: fmt.Sprintf("the schema applies its subschemas to values nested %d levels deep more than %.0e times: "+
				"its work grows exponentially with the depth of the value (look for anyOf, oneOf or allOf alternatives that lead back to the same schema)", k, growthLimit)}
		}
		prev, cur = cur, prev
	}
	return most, nil
}

func eachInPlace(n *node, f func(*node) error) error {
	for _, list := range [][]*node{n.allOf, n.anyOf, n.oneOf} {
		for _, m := range list {
			if err := f(m); err != nil {
				return err
			}
		}
	}
	for _, m := range []*node{n.ref, n.not, n.ifN, n.thenN, n.elseN} {
		if m != nil {
			if err := f(m); err != nil {
				return err
			}
		}
	}
	for _, d := range n.depSchemas {
		if err := f(d.n); err != nil {
			return err
		}
	}
	return nil
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

// compact returns JSON text without insignificant whitespace.
func compact(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	inStr := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(raw) { // raw may be cut after the backslash (shortJSON)
					i++
					out = append(out, raw[i])
				}
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inStr = true
		}
		out = append(out, c)
	}
	return out
}
