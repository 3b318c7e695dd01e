package jsonschema

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
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
	re  *regexp.Regexp
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

	// strings
	minLen     int64
	maxLen     int64
	pattern    *regexp.Regexp
	patternSrc string
	format     uint8
	formatName string

	// numbers
	minimum, maximum, exclMin, exclMax, multipleOf *number

	// applicators at the same instance location
	ref                 *node
	refStr              string
	allOf, anyOf, oneOf []*node
	not                 *node
	ifN, thenN, elseN   *node

	def []byte // the "default" value, compact; nil when absent

	onlyRef bool // the schema is {"$ref": ...} plus annotations

	mark uint8 // checkInPlace: 1 while visiting, 2 when done

	// Where defaults can apply, so that Validate skips the rest.
	reachMark  uint8 // markDefaults: 1 while visiting, 2 when done
	defHere    bool  // a property schema has a default
	childReach bool  // a property or item schema has defReach
	defReach   bool  // defHere or childReach, here or in place
	fan        int32 // checkInPlace: subschemas applied at one location
	id         int32 // checkInPlace: index in the order it returns
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
	n   *node
	ref string
}

type compiler struct {
	root    *jval
	rootID  string
	slab    []node // nodes are allocated in chunks
	anchors map[string]*jval
	pending []pendingRef
	reBytes int
	nodes   []*node
}

// Compile compiles a JSON Schema (draft 2020-12) document. The root may be
// any schema; callers that need an object schema check that themselves.
//
// It returns a *SchemaError for a keyword it does not support (such as
// unevaluatedProperties or $dynamicRef), a keyword with a malformed value,
// a pattern that Go's regexp package cannot compile, a reference to
// anything outside the document, or a $ref cycle that would apply schemas
// to the same value forever. Documents that are not strict JSON give a
// *jsontext.SyntaxError. Documents over MaxSchemaBytes or nested deeper
// than MaxSchemaDepth are refused.
func Compile(doc []byte) (*Schema, error) {
	root, schemas, err := parseDoc(doc)
	if err != nil {
		if _, ok := err.(*SchemaError); ok {
			return nil, err
		}
		return nil, &SchemaError{Msg: "not valid JSON: " + err.Error()}
	}
	c := &compiler{root: root, slab: make([]node, 0, min(schemas, 256)), nodes: make([]*node, 0, min(schemas, 256))}
	if root.kind == kObject {
		if id, ok := root.get("$id"); ok && id.kind == kString {
			c.rootID = strings.TrimSuffix(id.s, "#")
		}
	}
	rn, err := c.compile(root, "", true)
	if err != nil {
		return nil, err
	}
	for len(c.pending) > 0 {
		pr := c.pending[len(c.pending)-1]
		c.pending = c.pending[:len(c.pending)-1]
		if pr.n.ref, err = c.resolve(pr.n, pr.ref); err != nil {
			return nil, err
		}
	}
	order, err := checkInPlace(c.nodes)
	if err != nil {
		return nil, err
	}
	if err := checkGrowth(order, rn); err != nil {
		return nil, err
	}
	// A default that its own schema rejects would make every call that
	// omits the property invalid; leave such defaults out.
	defaults, defaultBytes := false, 0
	for _, n := range c.nodes {
		if n.def != nil {
			if validates(n, n.def) {
				defaults = true
				defaultBytes += len(n.def)
			} else {
				n.def = nil
			}
		}
	}
	if defaults {
		markDefaults(rn, 0)
	}
	return &Schema{root: rn, defaults: defaults, defaultBytes: defaultBytes}, nil
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
func (c *compiler) compile(v *jval, loc string, isRoot bool) (*node, error) {
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
	sub := func(key string, sv *jval) (*node, error) {
		return c.compile(sv, loc+"/"+escapeToken(key), false)
	}
	var itemsArray *jval
	var additionalItems *jval
	var exclMinBool, exclMaxBool bool
	annotationsOnly := true
	for _, m := range v.members {
		key, kv := m.key, m.val
		var err error
		switch key {
		case "$schema", "$comment", "title", "description", "examples", "deprecated", "readOnly", "writeOnly",
			"contentEncoding", "contentMediaType", "contentSchema", "$vocabulary", "$recursiveAnchor", "discriminator",
			"nullable", "x-nullable":
			continue
		case "$id":
			if kv.kind != kString {
				return nil, c.errf(at(loc, key), `"$id" must be a string`)
			}
			if !isRoot && !strings.HasPrefix(kv.s, "#") {
				return nil, c.errf(at(loc, key), `"$id" in a subschema (an embedded resource) is not supported; only the root may have one`)
			}
			if !isRoot {
				c.addAnchor(strings.TrimPrefix(kv.s, "#"), v)
			}
			continue
		case "$anchor", "$dynamicAnchor":
			if kv.kind != kString || kv.s == "" {
				return nil, c.errf(at(loc, key), "%q must be a non-empty string", key)
			}
			c.addAnchor(kv.s, v)
			continue
		case "default":
			n.def = compact(kv.raw)
			continue
		case "$dynamicRef", "$recursiveRef", "unevaluatedProperties", "unevaluatedItems":
			return nil, c.errf(at(loc, key), "keyword %q is not supported", key)
		case "$defs", "definitions":
			if kv.kind != kObject {
				return nil, c.errf(at(loc, key), "%q must be an object", key)
			}
			for _, d := range kv.members {
				if _, err := c.compile(d.val, loc+"/"+key+"/"+escapeToken(d.key), false); err != nil {
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
			c.pending = append(c.pending, pendingRef{n: n, ref: kv.s})
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
				pn, err := c.compile(pm.val, loc+"/"+key+"/"+escapeToken(name), false)
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
				pn, err := c.compile(pm.val, ploc, false)
				if err != nil {
					return nil, err
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
				dn, err := c.compile(dv, dloc, false)
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
		case "format":
			if kv.kind != kString {
				return nil, c.errf(at(loc, key), `"format" must be a string`)
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
	if itemsArray != nil && additionalItems != nil {
		an, err := c.compile(additionalItems, loc+"/additionalItems", false)
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
	for _, p := range n.props {
		if defaultOf(p.n) != nil {
			n.defHere = true
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

func (c *compiler) addAnchor(name string, v *jval) {
	if c.anchors == nil {
		c.anchors = make(map[string]*jval)
	}
	if _, dup := c.anchors[name]; !dup {
		c.anchors[name] = v
	}
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
		n, err := c.compile(e, loc+"/"+strconv.Itoa(i), false)
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
		dn, err := c.compile(m.val, loc+"/"+escapeToken(name), false)
		if err != nil {
			return err
		}
		n.depSchemas = append(n.depSchemas, depSchema{prop: name, n: dn})
	}
	return nil
}

// regexpCache keeps compiled patterns across Compile calls: registries
// compile many schemas that share patterns, and a *regexp.Regexp is safe
// for concurrent use. It keeps short patterns only and stops growing at
// regexpCacheMax entries, so schemas from a hostile server cannot make it
// hold much memory.
var (
	regexpCache  sync.Map // string → *regexp.Regexp
	regexpCached atomic.Int32
)

const (
	regexpCacheMax    = 1024
	regexpCacheMaxLen = 256
)

func (c *compiler) regexp(src, loc string) (*regexp.Regexp, error) {
	if re, ok := regexpCache.Load(src); ok {
		return re.(*regexp.Regexp), nil
	}
	if len(src) > maxPatternBytes {
		return nil, c.errf(loc, "the pattern is longer than %d bytes", maxPatternBytes)
	}
	c.reBytes += len(src)
	if c.reBytes > maxTotalPatterns {
		return nil, c.errf(loc, "the patterns add up to more than %d bytes", maxTotalPatterns)
	}
	re, err := regexp.Compile(src)
	if err != nil {
		msg := err.Error()
		if e, ok := err.(interface{ Unwrap() error }); ok && e.Unwrap() != nil {
			msg = e.Unwrap().Error()
		}
		msg = strings.TrimPrefix(msg, "error parsing regexp: ")
		return nil, c.errf(loc, "pattern %s is not supported: %s (patterns use RE2 syntax: no lookaround or backreferences)", quote(shorten(src, 80)), msg)
	}
	if len(src) <= regexpCacheMaxLen && regexpCached.Add(1) <= regexpCacheMax {
		regexpCache.Store(src, re)
	}
	return re, nil
}

// resolve finds the target of a local reference made by n.
func (c *compiler) resolve(n *node, ref string) (*node, error) {
	loc := n.loc + "/$ref"
	base, frag, _ := strings.Cut(ref, "#")
	if base != "" && base != c.rootID {
		return nil, c.errf(loc, "reference %s is not local; only references within the document (starting with #) are supported", quote(shorten(ref, 80)))
	}
	if frag == "" {
		return c.compile(c.root, "", true)
	}
	if !strings.HasPrefix(frag, "/") {
		target, ok := c.anchors[frag]
		if !ok {
			return nil, c.errf(loc, "reference %s: no $anchor with that name", quote(shorten(ref, 80)))
		}
		return c.compile(target, c.memoLoc(target), false)
	}
	unesc, err := url.PathUnescape(frag)
	if err != nil {
		return nil, c.errf(loc, "reference %s has a bad percent-escape", quote(shorten(ref, 80)))
	}
	v := c.root
	var b strings.Builder
	for _, tok := range strings.Split(unesc[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var next *jval
		switch v.kind {
		case kObject:
			next, _ = v.get(tok)
		case kArray:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v.elems) && strconv.Itoa(i) == tok {
				next = v.elems[i]
			}
		}
		if next == nil {
			return nil, c.errf(loc, "reference %s points to nothing in the document", quote(shorten(ref, 80)))
		}
		v = next
		b.WriteByte('/')
		b.WriteString(escapeToken(tok))
	}
	return c.compile(v, b.String(), v == c.root)
}

func (c *compiler) memoLoc(v *jval) string {
	if v.node != nil {
		return v.node.loc
	}
	return ""
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
func checkGrowth(order []*node, root *node) error {
	recursive := false
	for _, n := range order {
		if n.ref != nil {
			recursive = true
			break
		}
	}
	if !recursive {
		return nil // a tree: the work is bounded by its size
	}
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
			}
			_ = eachInPlace(n, func(m *node) error {
				obj += objSum[m.id]
				arr += arrSum[m.id]
				return nil
			})
			objSum[i], arrSum[i] = obj, arr
			cur[i] = max(obj, arr)
		}
		if cur[root.id] > growthLimit {
			return &SchemaError{Pointer: root.loc, Msg: fmt.Sprintf("the schema applies its subschemas to values nested %d levels deep more than %.0e times: "+
				"its work grows exponentially with the depth of the value (look for anyOf, oneOf or allOf alternatives that lead back to the same schema)", k, growthLimit)}
		}
		prev, cur = cur, prev
	}
	return nil
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
