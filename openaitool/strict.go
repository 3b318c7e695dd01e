package openaitool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/jsonschema"
	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/internal/schemarewrite"
)

// StrictMode says whether function definitions are sent with
// "strict": true, which makes the model's arguments follow the schema
// exactly (OpenAI Structured Outputs) but accepts only a subset of JSON
// Schema.
type StrictMode int

const (
	// StrictOff sends schemas as they are, without "strict": true. It is
	// the zero value and the default.
	StrictOff StrictMode = iota
	// StrictOn rewrites every schema to the strict subset (see
	// [StrictSchema]) and makes [NewTools] fail, naming the tool and the
	// keyword, when a schema cannot be made strict.
	StrictOn
	// StrictAuto sends a tool strict only when the rewrite loses nothing
	// the model would have seen (no keyword moved into a description or
	// dropped); other tools are sent as they are, without strict.
	StrictAuto
)

// String returns "off", "on" or "auto".
func (m StrictMode) String() string {
	switch m {
	case StrictOff:
		return "off"
	case StrictOn:
		return "on"
	case StrictAuto:
		return "auto"
	}
	return "StrictMode(" + strconv.Itoa(int(m)) + ")"
}

// Limits of the strict subset, from OpenAI's Structured Outputs guide.
const (
	maxStrictProperties = 5000    // object properties in total
	maxStrictNesting    = 10      // levels of object nesting
	maxStrictChars      = 120_000 // property names, definition names, enum and const values
	maxStrictEnumValues = 1000    // enum values in total
	maxLongEnumValues   = 250     // a string enum longer than this ...
	maxLongEnumChars    = 15_000  // ... may have at most this many characters
	maxSchemaNodes      = 100_000 // work cap for untrusted (imported) schemas
	maxSchemaDepth      = 100     // JSON nesting cap for untrusted schemas
)

// A StrictError reports a schema that cannot be made strict.
type StrictError struct {
	// Tool is the tool's name, when known.
	Tool string
	// Keyword is the JSON Schema keyword at fault, such as "allOf" or
	// "additionalProperties".
	Keyword string
	// Pointer is the JSON pointer of the schema node that has it; "" is
	// the root.
	Pointer string
	// Reason says why, in plain words.
	Reason string
}

// Error names the tool, the keyword and where it is.
func (e *StrictError) Error() string {
	where := e.Pointer
	if where == "" {
		where = "the root"
	}
	if e.Tool != "" {
		return fmt.Sprintf("tool %q cannot use OpenAI strict mode: %q at %s: %s", e.Tool, e.Keyword, where, e.Reason)
	}
	return fmt.Sprintf("schema cannot use OpenAI strict mode: %q at %s: %s", e.Keyword, where, e.Reason)
}

// StrictSchema rewrites a parameters schema (an object schema) into the
// subset OpenAI accepts with "strict": true:
//
//   - every object lists all its properties in "required" and has
//     "additionalProperties": false; a property that was optional becomes
//     nullable ("type": ["T","null"], or an added {"type":"null"} branch),
//     and its "default" is removed from the schema and named in its
//     description. When the model sends null for such a property,
//     [Tools.Normalize] puts the default back when the default is valid
//     for the property's own schema, and removes the property otherwise,
//     before the call runs, so the tool sees what it would have seen
//     without strict mode;
//   - "oneOf" becomes "anyOf"; a "$ref" with sibling keywords becomes
//     {"anyOf":[{"$ref":…}], siblings…};
//   - keywords the subset lacks but that only constrain values
//     (minLength, maxLength, minProperties, maxProperties, uniqueItems,
//     contains, propertyNames, unevaluated*, a format that clawtool checks
//     but strict mode lacks (uri), a pattern with look-around or
//     back-references) are moved into the description as "Constraints: …";
//   - "format" is kept for the formats strict mode accepts (date-time,
//     time, date, duration, email, hostname, ipv4, ipv6, uuid; OpenAI
//     refuses a schema with any other). Any other format that clawtool
//     does not check either ("float" on a number, "int64", "password", …)
//     is an annotation: it leaves the schema and is named in the
//     description (`Format: "float".`), and nothing is lost;
//   - "examples" and "deprecated" are moved into the description;
//     "$schema", "$id", "$comment", "readOnly" and "writeOnly" are
//     dropped; unknown keywords are dropped.
//
// The arguments are still validated against the original schema when the
// call runs, so moved constraints are enforced on our side.
//
// StrictSchema returns a [*StrictError] when the schema cannot be made
// strict: a root that is not a plain object schema, or is anyOf/oneOf; an
// open object (additionalProperties true or a schema, patternProperties,
// or an object below the root without properties); an array without an
// items schema; a schema that accepts any value ({} or true); allOf, not,
// if/then/else, dependentRequired, dependentSchemas, prefixItems; a $ref
// outside the document; or a schema over the size limits (5000
// properties, 10 levels of object nesting, 1000 enum values, 120,000
// characters of names and values).
//
// lossy lists the changes that lose something the model would have seen
// (moved or dropped keywords); [StrictAuto] uses strict only when it is
// empty.
func StrictSchema(params json.RawMessage) (schema json.RawMessage, lossy []string, err error) {
	r, err := strictRewrite(params)
	if err != nil {
		return nil, nil, err
	}
	return r.schema, r.lossy, nil
}

// strictResult is a rewritten schema and how to undo its nullable fields.
type strictResult struct {
	schema []byte
	lossy  []string
	plan   *plan            // nil when no property was made nullable
	defs   map[string]*plan // plans of $defs, by reference ("#/$defs/x")
	// check is the original schema, compiled, when some default is put
	// back: Normalize puts none back if together they fail it.
	check *jsonschema.Schema
}

// plan says, for a node of the schema, which properties strict mode made
// nullable, so that a null the model sends for one can be undone.
type plan struct {
	props map[string]*propPlan
	items *plan
	anyOf []*plan
	ref   string
}

type propPlan struct {
	addedNull bool // optional property made nullable by the rewrite
	// def is its default, nil when it has none or the default fails the
	// property's own schema (then leaving the property out is the only
	// way to say "not given" that the schema accepts).
	def   json.RawMessage
	child *plan
}

type strictConv struct {
	params    json.RawMessage // the original schema
	check     *jsonschema.Schema
	compiled  bool // check was compiled (it stays nil if that failed)
	defaults  bool // some default is put back by Normalize
	lossy     []string
	defs      map[string]*plan
	props     int
	chars     int
	enums     int
	nodes     int
	nullable  bool // some property was made nullable
	rootLevel bool
}

func strictRewrite(params json.RawMessage) (*strictResult, error) {
	c := &strictConv{params: params, defs: map[string]*plan{}}
	root, err := jsonobj.Parse(params)
	if err != nil {
		return nil, &StrictError{Keyword: "type", Reason: "the parameters schema is not a JSON object: " + err.Error()}
	}
	if t, ok := root.Get("type"); !ok || string(bytes.TrimSpace(t)) != `"object"` {
		return nil, &StrictError{Keyword: "type", Reason: `the root must be an object schema with "type":"object" (not nullable)`}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if root.Has(k) {
			return nil, &StrictError{Keyword: k, Reason: "the root may not be a union; give each variant its own tool or wrap it in a property"}
		}
	}
	if root.Has("$ref") {
		return nil, &StrictError{Keyword: "$ref", Reason: "the root may not be a reference; inline the object schema at the root"}
	}
	// Definitions first, so that their plans exist for references.
	type defNode struct {
		key, ptr string
		value    json.RawMessage
	}
	var pending [][]defNode
	var kinds []string
	for _, dk := range []string{"$defs", "definitions"} {
		raw, ok := root.Get(dk)
		if !ok {
			continue
		}
		defs, err := jsonobj.Parse(raw)
		if err != nil {
			return nil, &StrictError{Keyword: dk, Pointer: "/" + dk, Reason: "must be an object of schemas"}
		}
		var nodes []defNode
		for _, d := range defs {
			ptr := "/" + dk + "/" + schemarewrite.EscapePointer(d.Key)
			c.chars += len(d.Key)
			c.defs["#"+ptr] = &plan{}
			nodes = append(nodes, defNode{d.Key, ptr, d.Value})
		}
		pending = append(pending, nodes)
		kinds = append(kinds, dk)
	}
	rootPlan := &plan{}
	c.defs["#"] = rootPlan
	for i, nodes := range pending {
		out := make(jsonobj.Object, 0, len(nodes))
		for _, d := range nodes {
			s, sub, err := c.node(d.value, d.ptr, 1, 1)
			if err != nil {
				return nil, err
			}
			*c.defs["#"+d.ptr] = *sub
			out = append(out, jsonobj.Member{Key: d.key, Value: s})
		}
		b, err := out.MarshalJSON()
		if err != nil {
			return nil, err
		}
		root.Set(kinds[i], b)
	}
	rootBytes, err := root.MarshalJSON()
	if err != nil {
		return nil, &StrictError{Keyword: "type", Reason: err.Error()}
	}
	c.rootLevel = true
	s, p, err := c.node(rootBytes, "", 0, 0)
	if err != nil {
		return nil, err
	}
	*rootPlan = *p
	if err := c.checkTotals(); err != nil {
		return nil, err
	}
	res := &strictResult{schema: s, lossy: c.lossy}
	if c.nullable {
		res.plan, res.defs = rootPlan, c.defs
		if c.defaults {
			res.check = c.check
		}
	}
	return res, nil
}

// validDefault reports whether the schema at ptr of the original document
// has a default that passes that schema, as the registry's validator
// judges it (formats asserted). When the original schema does not compile
// here, no default is valid: the property is then left out, which an
// optional property's schema always accepts.
func (c *strictConv) validDefault(ptr string) bool {
	if !c.compiled {
		c.compiled = true
		if s, err := jsonschema.CompileWith(c.params, jsonschema.Options{AssertFormat: true}); err == nil {
			c.check = s
		}
	}
	return c.check != nil && c.check.DefaultValid(ptr)
}

func (c *strictConv) checkTotals() error {
	switch {
	case c.props > maxStrictProperties:
		return &StrictError{Keyword: "properties", Reason: fmt.Sprintf("%d object properties in total; strict mode allows at most %d", c.props, maxStrictProperties)}
	case c.enums > maxStrictEnumValues:
		return &StrictError{Keyword: "enum", Reason: fmt.Sprintf("%d enum values in total; strict mode allows at most %d", c.enums, maxStrictEnumValues)}
	case c.chars > maxStrictChars:
		return &StrictError{Keyword: "properties", Reason: fmt.Sprintf("property names, definition names, enum and const values add up to %d characters; strict mode allows at most %d", c.chars, maxStrictChars)}
	}
	return nil
}

// Keywords kept as they are in strict mode.
var strictKept = map[string]bool{
	"type": true, "description": true, "title": true, "enum": true, "const": true,
	"pattern": true, "format": true,
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"minItems": true, "maxItems": true,
}

// Keywords that make a schema impossible to express strictly.
var strictRefused = map[string]string{
	"allOf":             "not supported in strict mode; merge the branches into one schema",
	"not":               "not supported in strict mode",
	"if":                "conditional schemas are not supported in strict mode",
	"then":              "conditional schemas are not supported in strict mode",
	"else":              "conditional schemas are not supported in strict mode",
	"dependentRequired": "not supported in strict mode",
	"dependentSchemas":  "not supported in strict mode",
	"dependencies":      "not supported in strict mode",
	"prefixItems":       "tuples are not supported in strict mode; use an object",
	"patternProperties": "an object with pattern properties accepts keys strict mode cannot list",
	"$dynamicRef":       "dynamic references are not supported in strict mode",
	"$recursiveRef":     "dynamic references are not supported in strict mode",
}

// Value constraints the subset lacks: moved into the description.
var strictMoved = map[string]bool{
	"minLength": true, "maxLength": true, "minProperties": true, "maxProperties": true,
	"uniqueItems": true, "contains": true, "minContains": true, "maxContains": true,
	"propertyNames": true, "unevaluatedItems": true, "unevaluatedProperties": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
}

// Annotations with no effect on validation: dropped.
var strictDropped = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$anchor": true, "$dynamicAnchor": true,
	"$vocabulary": true, "readOnly": true, "writeOnly": true,
}

var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// node rewrites one schema node. level is the object nesting level of the
// node's parent object; depth the JSON nesting.
func (c *strictConv) node(raw json.RawMessage, ptr string, level, depth int) (json.RawMessage, *plan, error) {
	c.nodes++
	if c.nodes > maxSchemaNodes || depth > maxSchemaDepth {
		return nil, nil, &StrictError{Keyword: "$defs", Pointer: ptr, Reason: "the schema is too large or too deeply nested to convert"}
	}
	root := c.rootLevel && ptr == ""
	if jsonobj.Kind(raw) == "boolean" {
		return nil, nil, &StrictError{Keyword: strings.TrimSpace(string(raw)), Pointer: ptr, Reason: "a boolean schema is not supported in strict mode; give the value a type"}
	}
	o, err := jsonobj.Parse(raw)
	if err != nil {
		return nil, nil, &StrictError{Keyword: "type", Pointer: ptr, Reason: "a schema must be a JSON object"}
	}
	p := &plan{}
	var notes, constraints []string

	// A reference with siblings is wrapped: {"anyOf":[{"$ref":…}], siblings…}.
	if ref, ok := o.Get("$ref"); ok {
		var s string
		if json.Unmarshal(ref, &s) != nil || !(s == "#" || strings.HasPrefix(s, "#/$defs/") || strings.HasPrefix(s, "#/definitions/")) {
			return nil, nil, &StrictError{Keyword: "$ref", Pointer: ptr, Reason: "only references inside the schema (#, #/$defs/…) are supported"}
		}
		if s != "#" {
			if _, ok := c.defs[s]; !ok {
				return nil, nil, &StrictError{Keyword: "$ref", Pointer: ptr, Reason: fmt.Sprintf("reference %q does not resolve to a definition", s)}
			}
		}
		if len(o) == 1 {
			p.ref = s
			return raw, p, nil
		}
		if o.Has("anyOf") || o.Has("oneOf") {
			return nil, nil, &StrictError{Keyword: "$ref", Pointer: ptr, Reason: "a reference beside anyOf/oneOf is not supported"}
		}
		o.Delete("$ref")
		o.Set("anyOf", json.RawMessage(`[{"$ref":`+string(jsonobj.Quote(s))+`}]`))
	}
	union := "anyOf" // the keyword of the branches in the original schema
	if alt, ok := o.Get("oneOf"); ok {
		if o.Has("anyOf") {
			return nil, nil, &StrictError{Keyword: "oneOf", Pointer: ptr, Reason: "oneOf beside anyOf is not supported"}
		}
		union = "oneOf"
		o.Delete("oneOf")
		o.Set("anyOf", alt)
		c.lossy = append(c.lossy, fmt.Sprintf("%s: oneOf rewritten as anyOf", pointerName(ptr)))
	}

	types := schemarewrite.Types(o)
	isObject := slices.Contains(types, "object") || o.Has("properties")
	isArray := slices.Contains(types, "array") || o.Has("items")
	if len(types) == 0 && !isObject && !isArray && !o.Has("anyOf") && !o.Has("enum") && !o.Has("const") {
		if !o.Has("$ref") {
			return nil, nil, &StrictError{Keyword: "type", Pointer: ptr, Reason: "a schema that accepts any value is not supported in strict mode; give it a type"}
		}
	}

	out := make(jsonobj.Object, 0, len(o)+2)
	for _, m := range o {
		k, v := m.Key, m.Value
		switch {
		case strictRefused[k] != "":
			return nil, nil, &StrictError{Keyword: k, Pointer: ptr, Reason: strictRefused[k]}
		case k == "$defs" || k == "definitions":
			if !root {
				return nil, nil, &StrictError{Keyword: k, Pointer: ptr, Reason: "definitions are supported only at the root"}
			}
			out = append(out, m) // rewritten by strictRewrite
		case k == "properties" || k == "required" || k == "additionalProperties" || k == "items" || k == "anyOf":
			// handled below
		case k == "default":
			notes = append(notes, "Default: "+jsonobj.Compact(v)+".")
		case k == "examples":
			notes = append(notes, "Examples: "+listJSON(v)+".")
		case k == "deprecated":
			if string(bytes.TrimSpace(v)) == "true" {
				notes = append(notes, "Deprecated.")
			}
		case k == "enum":
			if err := c.countEnum(v, ptr); err != nil {
				return nil, nil, err
			}
			out = append(out, m)
		case k == "const":
			c.chars += len(jsonobj.Compact(v))
			out = append(out, m)
		case k == "format":
			var f string
			_ = json.Unmarshal(v, &f)
			switch {
			case strictFormats[f]:
				out = append(out, m)
			case jsontext.KnownFormat(f) || jsonobj.Kind(v) != "string":
				// A format clawtool checks: the model is no longer held to it.
				constraints = append(constraints, "format="+jsonobj.Compact(v))
				c.lossy = append(c.lossy, fmt.Sprintf("%s: format %q moved into the description", pointerName(ptr), f))
			default:
				// An annotation for clawtool too: it constrains nothing.
				notes = append(notes, "Format: "+jsonobj.Compact(v)+".")
			}
		case k == "pattern":
			var pat string
			_ = json.Unmarshal(v, &pat)
			if unsupportedRegexp(pat) {
				constraints = append(constraints, "pattern="+jsonobj.Compact(v))
				c.lossy = append(c.lossy, fmt.Sprintf("%s: pattern with look-around or back-references moved into the description", pointerName(ptr)))
			} else {
				out = append(out, m)
			}
		case strictKept[k]:
			out = append(out, m)
		case strictMoved[k]:
			constraints = append(constraints, k+"="+jsonobj.Compact(v))
			c.lossy = append(c.lossy, fmt.Sprintf("%s: %s moved into the description", pointerName(ptr), k))
		case strictDropped[k]:
		default:
			c.lossy = append(c.lossy, fmt.Sprintf("%s: unknown keyword %q dropped", pointerName(ptr), k))
		}
	}

	if alt, ok := o.Get("anyOf"); ok {
		if root {
			return nil, nil, &StrictError{Keyword: "anyOf", Pointer: ptr, Reason: "the root may not be a union"}
		}
		var branches []json.RawMessage
		if json.Unmarshal(alt, &branches) != nil || len(branches) == 0 {
			return nil, nil, &StrictError{Keyword: "anyOf", Pointer: ptr, Reason: "must be a non-empty array of schemas"}
		}
		conv := make([]json.RawMessage, len(branches))
		for i, b := range branches {
			s, bp, err := c.node(b, ptr+"/"+union+"/"+strconv.Itoa(i), level, depth+1)
			if err != nil {
				return nil, nil, err
			}
			conv[i] = s
			p.anyOf = append(p.anyOf, bp)
		}
		out.Set("anyOf", jsonobj.Array(conv))
	}

	if isObject {
		if err := c.object(o, &out, p, ptr, level+1, depth, root); err != nil {
			return nil, nil, err
		}
	}
	if isArray {
		items, ok := o.Get("items")
		if !ok || jsonobj.Kind(items) != "object" || isEmptyObject(items) {
			return nil, nil, &StrictError{Keyword: "items", Pointer: ptr, Reason: "an array needs an items schema with a type in strict mode"}
		}
		s, ip, err := c.node(items, ptr+"/items", level, depth+1)
		if err != nil {
			return nil, nil, err
		}
		out.Set("items", s)
		p.items = ip
	}

	schemarewrite.AddToDescription(&out, notes, constraints)
	b, err := out.MarshalJSON()
	if err != nil {
		return nil, nil, &StrictError{Keyword: "type", Pointer: ptr, Reason: err.Error()}
	}
	return b, p, nil
}

// object rewrites the object keywords of o into out.
func (c *strictConv) object(o jsonobj.Object, out *jsonobj.Object, p *plan, ptr string, level, depth int, root bool) error {
	if level > maxStrictNesting {
		return &StrictError{Keyword: "properties", Pointer: ptr, Reason: fmt.Sprintf("objects are nested more than %d levels deep", maxStrictNesting)}
	}
	var props jsonobj.Object
	if raw, ok := o.Get("properties"); ok {
		var err error
		if props, err = jsonobj.Parse(raw); err != nil {
			return &StrictError{Keyword: "properties", Pointer: ptr, Reason: "must be an object of schemas"}
		}
	}
	if ap, ok := o.Get("additionalProperties"); ok && strings.TrimSpace(string(ap)) != "false" {
		return &StrictError{Keyword: "additionalProperties", Pointer: ptr, Reason: "an open object (a map with free-form keys) cannot be made strict; list its properties, or use strict off for this tool"}
	} else if !ok && len(props) == 0 && !root {
		return &StrictError{Keyword: "additionalProperties", Pointer: ptr, Reason: "an object without properties accepts any keys (an open object), which strict mode cannot express; list its properties, or use strict off for this tool"}
	}
	var required []string
	if raw, ok := o.Get("required"); ok {
		if json.Unmarshal(raw, &required) != nil {
			return &StrictError{Keyword: "required", Pointer: ptr, Reason: "must be an array of property names"}
		}
	}
	for _, r := range required {
		if !props.Has(r) {
			return &StrictError{Keyword: "required", Pointer: ptr, Reason: fmt.Sprintf("required property %q is not listed in properties", r)}
		}
	}
	p.props = make(map[string]*propPlan, len(props))
	conv := make(jsonobj.Object, 0, len(props))
	for _, m := range props {
		c.props++
		c.chars += len(m.Key)
		cptr := ptr + "/properties/" + schemarewrite.EscapePointer(m.Key)
		optional := !slices.Contains(required, m.Key)
		s, cp, err := c.node(m.Value, cptr, level, depth+2)
		if err != nil {
			return err
		}
		pp := &propPlan{child: cp}
		if optional {
			var wasNullable bool
			s, wasNullable = makeNullable(s)
			def, hasDef := defaultOf(m.Value)
			if wasNullable {
				if hasDef && string(def) != "null" {
					c.lossy = append(c.lossy, fmt.Sprintf("%s: an optional nullable property with a default; null is passed to the tool, so the default cannot be asked for", pointerName(cptr)))
				}
			} else {
				pp.addedNull = true
				c.nullable = true
				if hasDef && c.validDefault(cptr) {
					pp.def = def
					c.defaults = true
				}
			}
		}
		p.props[m.Key] = pp
		conv = append(conv, jsonobj.Member{Key: m.Key, Value: s})
	}
	b, err := conv.MarshalJSON()
	if err != nil {
		return err
	}
	out.Set("properties", b)
	out.Set("required", jsonobj.Strings(props.Keys()))
	out.Set("additionalProperties", json.RawMessage("false"))
	if !slices.Contains(schemarewrite.Types(*out), "object") && !out.Has("type") {
		// {"properties":…} without a type: say it is an object.
		*out = append(jsonobj.Object{{Key: "type", Value: json.RawMessage(`"object"`)}}, *out...)
	}
	return nil
}

func (c *strictConv) countEnum(v json.RawMessage, ptr string) error {
	var vals []json.RawMessage
	if json.Unmarshal(v, &vals) != nil {
		return &StrictError{Keyword: "enum", Pointer: ptr, Reason: "must be an array"}
	}
	c.enums += len(vals)
	n := 0
	for _, e := range vals {
		var s string
		if json.Unmarshal(e, &s) == nil {
			n += len(s)
		} else {
			n += len(e)
		}
	}
	c.chars += n
	if len(vals) > maxLongEnumValues && n > maxLongEnumChars {
		return &StrictError{Keyword: "enum", Pointer: ptr, Reason: fmt.Sprintf("an enum of %d values has %d characters; strict mode allows at most %d for enums of more than %d values", len(vals), n, maxLongEnumChars, maxLongEnumValues)}
	}
	return nil
}

// makeNullable returns s that also accepts null, and whether it already did.
func makeNullable(s json.RawMessage) (json.RawMessage, bool) {
	o, err := jsonobj.Parse(s)
	if err != nil {
		return s, false
	}
	if t, ok := o.Get("type"); ok && !o.Has("const") {
		var one string
		var many []string
		switch {
		case json.Unmarshal(t, &one) == nil:
			if one == "null" {
				return s, true
			}
			many = []string{one, "null"}
		case json.Unmarshal(t, &many) == nil:
			if slices.Contains(many, "null") {
				return s, true
			}
			many = append(many, "null")
		}
		o.Set("type", jsonobj.Strings(many))
		if e, ok := o.Get("enum"); ok {
			var vals []json.RawMessage
			if json.Unmarshal(e, &vals) == nil {
				vals = append(vals, json.RawMessage("null"))
				o.Set("enum", jsonobj.Array(vals))
			}
		}
		b, _ := o.MarshalJSON()
		return b, false
	}
	if alt, ok := o.Get("anyOf"); ok {
		var branches []json.RawMessage
		if json.Unmarshal(alt, &branches) == nil {
			for _, b := range branches {
				if nb, err := jsonobj.Parse(b); err == nil {
					if t, _ := nb.Get("type"); string(t) == `"null"` {
						return s, true
					}
				}
			}
			branches = append(branches, json.RawMessage(`{"type":"null"}`))
			o.Set("anyOf", jsonobj.Array(branches))
			b, _ := o.MarshalJSON()
			return b, false
		}
	}
	// {"enum":[…]} without a type, {"const":…}, …: wrap.
	desc, hasDesc := o.Get("description")
	o.Delete("description")
	inner, _ := o.MarshalJSON()
	w := jsonobj.Object{{Key: "anyOf", Value: jsonobj.Array([]json.RawMessage{inner, json.RawMessage(`{"type":"null"}`)})}}
	if hasDesc {
		w.Set("description", desc)
	}
	b, _ := w.MarshalJSON()
	return b, false
}

func defaultOf(schema json.RawMessage) (json.RawMessage, bool) {
	o, err := jsonobj.Parse(schema)
	if err != nil {
		return nil, false
	}
	d, ok := o.Get("default")
	if !ok {
		return nil, false
	}
	var b bytes.Buffer
	if json.Compact(&b, d) != nil {
		return nil, false
	}
	return b.Bytes(), true
}

func isEmptyObject(raw json.RawMessage) bool {
	o, err := jsonobj.Parse(raw)
	return err == nil && len(o) == 0
}

// unsupportedRegexp reports look-around and back-references, which the
// strict subset's regular expressions lack.
func unsupportedRegexp(p string) bool {
	if strings.Contains(p, "(?=") || strings.Contains(p, "(?!") || strings.Contains(p, "(?<=") || strings.Contains(p, "(?<!") {
		return true
	}
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if p[i+1] >= '1' && p[i+1] <= '9' {
				return true
			}
			i++
		}
	}
	return false
}

func pointerName(ptr string) string {
	if ptr == "" {
		return "(root)"
	}
	return ptr
}

func listJSON(v json.RawMessage) string {
	var vals []json.RawMessage
	if json.Unmarshal(v, &vals) != nil {
		return jsonobj.Compact(v)
	}
	parts := make([]string, len(vals))
	for i, e := range vals {
		parts[i] = jsonobj.Compact(e)
	}
	return strings.Join(parts, ", ")
}
