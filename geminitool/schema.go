package geminitool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsonobj"
	"github.com/miniopenclaw/tool/internal/schemarewrite"
)

// A SchemaError reports a JSON Schema that Gemini's schema dialect cannot
// express.
type SchemaError struct {
	// Tool is the tool's name, when known.
	Tool string
	// Keyword is the JSON Schema keyword at fault.
	Keyword string
	// Pointer is the JSON pointer of the schema node that has it; "" is
	// the root.
	Pointer string
	// Reason says why, in plain words.
	Reason string
}

// Error names the tool, the keyword and where it is.
func (e *SchemaError) Error() string {
	where := e.Pointer
	if where == "" {
		where = "the root"
	}
	prefix := "schema"
	if e.Tool != "" {
		prefix = fmt.Sprintf("tool %q", e.Tool)
	}
	return fmt.Sprintf("%s cannot be expressed for Gemini: %q at %s: %s", prefix, e.Keyword, where, e.Reason)
}

const (
	maxNodes = 100_000
	maxDepth = 64
)

// Schema converts a JSON Schema (draft 2020-12, an object root) into
// Gemini's schema dialect, the OpenAPI 3.0 subset of its Schema type:
//
//   - "type" becomes upper case (STRING, INTEGER, …); a type list with
//     "null" becomes the type with "nullable": true, as does an anyOf with
//     a {"type":"null"} branch, and an enum that lists null;
//   - references to $defs (or definitions) are inlined, since the dialect
//     has no $ref; "oneOf" becomes "anyOf"; a string "const" becomes a
//     one-value enum; the first of "examples" becomes "example";
//   - "properties", "required", "items", "enum" (of strings), "anyOf",
//     "description", "title", "default", "pattern", "minLength",
//     "maxLength", "minimum", "maximum", "minItems", "maxItems",
//     "minProperties" and "maxProperties" are kept, and "propertyOrdering"
//     records the properties' order;
//   - "format" is kept for the values Gemini knows (date-time and enum for
//     strings, int32 and int64 for integers, float and double for numbers);
//     other formats and the constraints the dialect lacks
//     (exclusiveMinimum, exclusiveMaximum, multipleOf, uniqueItems,
//     contains, …) are moved into the description as "Constraints: …",
//     and are still enforced when the call is validated;
//   - "additionalProperties": false is dropped (Gemini's objects take only
//     their properties), and annotations such as $schema, $id, $comment
//     and readOnly are dropped.
//
// Schema returns a [*SchemaError] naming the keyword for what the dialect
// cannot express: a recursive $ref, a reference outside the document,
// allOf, not, if/then/else, dependentRequired, dependentSchemas,
// prefixItems, patternProperties, an open object below the root
// (additionalProperties true or a schema, or no properties), an array
// without items, a non-string enum or const, several non-null types in one
// "type", or a schema that accepts any value.
func Schema(params json.RawMessage) (json.RawMessage, error) {
	root, err := jsonobj.Parse(params)
	if err != nil {
		return nil, &SchemaError{Keyword: "type", Reason: "the parameters schema is not a JSON object: " + err.Error()}
	}
	if t, ok := root.Get("type"); !ok || string(bytes.TrimSpace(t)) != `"object"` {
		return nil, &SchemaError{Keyword: "type", Reason: `the root must be an object schema with "type":"object"`}
	}
	c := &geminiConv{defs: map[string]json.RawMessage{}, active: map[string]bool{}}
	for _, dk := range []string{"$defs", "definitions"} {
		raw, ok := root.Get(dk)
		if !ok {
			continue
		}
		defs, err := jsonobj.Parse(raw)
		if err != nil {
			return nil, &SchemaError{Keyword: dk, Pointer: "/" + dk, Reason: "must be an object of schemas"}
		}
		for _, d := range defs {
			c.defs["#/"+dk+"/"+schemarewrite.EscapePointer(d.Key)] = d.Value
		}
	}
	c.defs["#"] = params
	return c.node(params, "", 0, true)
}

type geminiConv struct {
	defs   map[string]json.RawMessage
	active map[string]bool // references being inlined: a repeat is recursion
	nodes  int
}

var geminiRefused = map[string]string{
	"allOf":             "the Gemini schema dialect has no allOf; merge the branches into one schema",
	"not":               "the Gemini schema dialect has no not",
	"if":                "the Gemini schema dialect has no conditional schemas",
	"then":              "the Gemini schema dialect has no conditional schemas",
	"else":              "the Gemini schema dialect has no conditional schemas",
	"dependentRequired": "the Gemini schema dialect has no dependencies between properties",
	"dependentSchemas":  "the Gemini schema dialect has no dependencies between properties",
	"dependencies":      "the Gemini schema dialect has no dependencies between properties",
	"prefixItems":       "the Gemini schema dialect has no tuples; use an object",
	"patternProperties": "the Gemini schema dialect has no pattern properties (a map with free-form keys)",
	"$dynamicRef":       "the Gemini schema dialect has no references",
	"$recursiveRef":     "the Gemini schema dialect has no references",
}

// Keywords copied as they are.
var geminiKept = map[string]bool{
	"description": true, "title": true, "default": true, "pattern": true,
	"minLength": true, "maxLength": true, "minimum": true, "maximum": true,
	"minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
}

// Constraints the dialect lacks: moved into the description.
var geminiMoved = map[string]bool{
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true, "uniqueItems": true,
	"contains": true, "minContains": true, "maxContains": true, "propertyNames": true,
	"unevaluatedItems": true, "unevaluatedProperties": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
}

var geminiFormats = map[string][]string{
	"STRING":  {"date-time", "enum"},
	"INTEGER": {"int32", "int64"},
	"NUMBER":  {"float", "double"},
}

func (c *geminiConv) node(raw json.RawMessage, ptr string, depth int, root bool) (json.RawMessage, error) {
	c.nodes++
	if c.nodes > maxNodes || depth > maxDepth {
		return nil, &SchemaError{Keyword: "$ref", Pointer: ptr, Reason: "the schema is too large or too deeply nested to convert"}
	}
	if jsonobj.Kind(raw) == "boolean" {
		return nil, &SchemaError{Keyword: strings.TrimSpace(string(raw)), Pointer: ptr, Reason: "a boolean schema cannot be expressed; give the value a type"}
	}
	o, err := jsonobj.Parse(raw)
	if err != nil {
		return nil, &SchemaError{Keyword: "type", Pointer: ptr, Reason: "a schema must be a JSON object"}
	}
	for _, m := range o {
		if r := geminiRefused[m.Key]; r != "" {
			return nil, &SchemaError{Keyword: m.Key, Pointer: ptr, Reason: r}
		}
	}

	if ref, ok := o.Get("$ref"); ok {
		var s string
		_ = json.Unmarshal(ref, &s)
		target, ok := c.defs[s]
		if !ok {
			return nil, &SchemaError{Keyword: "$ref", Pointer: ptr, Reason: fmt.Sprintf("reference %q does not resolve to a definition in the schema", s)}
		}
		if c.active[s] {
			return nil, &SchemaError{Keyword: "$ref", Pointer: ptr, Reason: fmt.Sprintf("reference %q is recursive; the Gemini schema dialect has no references, so a recursive type cannot be inlined", s)}
		}
		c.active[s] = true
		inlined, err := c.node(target, ptr, depth+1, false)
		delete(c.active, s)
		if err != nil {
			return nil, err
		}
		if len(o) == 1 {
			return inlined, nil
		}
		// Siblings of $ref (a description, say) apply on top.
		merged, err := jsonobj.Parse(inlined)
		if err != nil {
			return nil, err
		}
		o.Delete("$ref")
		rest, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		conv, err := c.node(rest, ptr, depth+1, false)
		if err != nil {
			// The siblings alone may not be a full schema (no type):
			// take their kept keywords only.
			conv = rest
		}
		over, _ := jsonobj.Parse(conv)
		for _, m := range over {
			if m.Key == "description" || m.Key == "title" || m.Key == "default" || geminiKept[m.Key] {
				merged.Set(m.Key, m.Value)
			}
		}
		return merged.MarshalJSON()
	}

	out := make(jsonobj.Object, 0, len(o)+2)
	var notes, constraints []string
	nullable := false

	// The type.
	types := schemarewrite.Types(o)
	if i := slices.Index(types, "null"); i >= 0 {
		nullable = true
		types = slices.Delete(types, i, i+1)
	}
	var gtype string
	switch len(types) {
	case 0:
	case 1:
		gtype = strings.ToUpper(types[0])
		if !slices.Contains([]string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}, gtype) {
			return nil, &SchemaError{Keyword: "type", Pointer: ptr, Reason: fmt.Sprintf("unknown type %q", types[0])}
		}
	default:
		return nil, &SchemaError{Keyword: "type", Pointer: ptr, Reason: fmt.Sprintf("several types (%s) in one schema cannot be expressed; use anyOf with one type per branch", strings.Join(types, ", "))}
	}
	if gtype == "" && o.Has("properties") {
		gtype = "OBJECT"
	}
	if gtype == "" && o.Has("items") {
		gtype = "ARRAY"
	}

	// enum and const.
	var enum []string
	if e, ok := o.Get("enum"); ok {
		var vals []json.RawMessage
		if json.Unmarshal(e, &vals) != nil {
			return nil, &SchemaError{Keyword: "enum", Pointer: ptr, Reason: "must be an array"}
		}
		for _, v := range vals {
			var s string
			switch {
			case string(bytes.TrimSpace(v)) == "null":
				nullable = true
			case json.Unmarshal(v, &s) == nil:
				enum = append(enum, s)
			default:
				return nil, &SchemaError{Keyword: "enum", Pointer: ptr, Reason: "the Gemini schema dialect has enums of strings only; got " + string(v)}
			}
		}
		if gtype == "" {
			gtype = "STRING"
		}
		if gtype != "STRING" {
			return nil, &SchemaError{Keyword: "enum", Pointer: ptr, Reason: "the Gemini schema dialect has enums of strings only"}
		}
	}
	if cv, ok := o.Get("const"); ok {
		var s string
		if json.Unmarshal(cv, &s) != nil {
			return nil, &SchemaError{Keyword: "const", Pointer: ptr, Reason: "only a string const can be expressed (as a one-value enum); got " + string(cv)}
		}
		enum = []string{s}
		if gtype == "" {
			gtype = "STRING"
		}
	}

	// anyOf / oneOf.
	var branches []json.RawMessage
	for _, k := range []string{"anyOf", "oneOf"} {
		alt, ok := o.Get(k)
		if !ok {
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(alt, &list) != nil || len(list) == 0 {
			return nil, &SchemaError{Keyword: k, Pointer: ptr, Reason: "must be a non-empty array of schemas"}
		}
		for i, b := range list {
			if bo, err := jsonobj.Parse(b); err == nil && len(bo) == 1 {
				if t, _ := bo.Get("type"); string(bytes.TrimSpace(t)) == `"null"` {
					nullable = true
					continue
				}
			}
			conv, err := c.node(b, ptr+"/"+k+"/"+strconv.Itoa(i), depth+1, false)
			if err != nil {
				return nil, err
			}
			branches = append(branches, conv)
		}
	}
	if root && len(branches) > 0 {
		return nil, &SchemaError{Keyword: "anyOf", Pointer: ptr, Reason: "the parameters root may not be a union"}
	}

	if gtype == "" && len(branches) == 0 {
		return nil, &SchemaError{Keyword: "type", Pointer: ptr, Reason: "a schema that accepts any value cannot be expressed; give it a type"}
	}

	if len(branches) == 1 && gtype == "" {
		// anyOf [X, null]: X, nullable.
		one, _ := jsonobj.Parse(branches[0])
		for _, m := range one {
			out.Set(m.Key, m.Value)
		}
		branches = nil
	}
	if gtype != "" {
		out.Set("type", jsonobj.Quote(gtype))
	}

	for _, m := range o {
		k, v := m.Key, m.Value
		switch {
		case k == "type" || k == "enum" || k == "const" || k == "anyOf" || k == "oneOf" ||
			k == "properties" || k == "required" || k == "items" || k == "additionalProperties" ||
			k == "$defs" || k == "definitions":
		case k == "format":
			var f string
			_ = json.Unmarshal(v, &f)
			if slices.Contains(geminiFormats[gtype], f) {
				out.Set(k, v)
			} else {
				constraints = append(constraints, "format="+jsonobj.Compact(v))
			}
		case k == "examples":
			var ex []json.RawMessage
			if json.Unmarshal(v, &ex) == nil && len(ex) > 0 {
				out.Set("example", ex[0])
			}
		case k == "deprecated":
			if string(bytes.TrimSpace(v)) == "true" {
				notes = append(notes, "Deprecated.")
			}
		case geminiKept[k]:
			out.Set(k, v)
		case geminiMoved[k]:
			constraints = append(constraints, k+"="+jsonobj.Compact(v))
		}
	}
	if len(enum) > 0 {
		out.Set("enum", jsonobj.Strings(enum))
	}
	if len(branches) > 0 {
		out.Set("anyOf", jsonobj.Array(branches))
	}

	if gtype == "OBJECT" {
		if err := c.object(o, &out, ptr, depth, root); err != nil {
			return nil, err
		}
	}
	if gtype == "ARRAY" {
		items, ok := o.Get("items")
		if !ok || jsonobj.Kind(items) != "object" {
			return nil, &SchemaError{Keyword: "items", Pointer: ptr, Reason: "an array needs an items schema"}
		}
		conv, err := c.node(items, ptr+"/items", depth+1, false)
		if err != nil {
			return nil, err
		}
		out.Set("items", conv)
	}
	if nullable {
		out.Set("nullable", json.RawMessage("true"))
	}
	schemarewrite.AddToDescription(&out, notes, constraints)
	return out.MarshalJSON()
}

func (c *geminiConv) object(o jsonobj.Object, out *jsonobj.Object, ptr string, depth int, root bool) error {
	var props jsonobj.Object
	if raw, ok := o.Get("properties"); ok {
		var err error
		if props, err = jsonobj.Parse(raw); err != nil {
			return &SchemaError{Keyword: "properties", Pointer: ptr, Reason: "must be an object of schemas"}
		}
	}
	if ap, ok := o.Get("additionalProperties"); ok && strings.TrimSpace(string(ap)) != "false" {
		return &SchemaError{Keyword: "additionalProperties", Pointer: ptr, Reason: "an open object (a map with free-form keys) cannot be expressed; list its properties"}
	}
	if len(props) == 0 && !root {
		return &SchemaError{Keyword: "properties", Pointer: ptr, Reason: "an object without properties (a free-form object) cannot be expressed; list its properties"}
	}
	if len(props) == 0 {
		return nil
	}
	conv := make(jsonobj.Object, 0, len(props))
	for _, m := range props {
		s, err := c.node(m.Value, ptr+"/properties/"+schemarewrite.EscapePointer(m.Key), depth+1, false)
		if err != nil {
			return err
		}
		conv = append(conv, jsonobj.Member{Key: m.Key, Value: s})
	}
	b, err := conv.MarshalJSON()
	if err != nil {
		return err
	}
	out.Set("properties", b)
	if r, ok := o.Get("required"); ok {
		var req []string
		if json.Unmarshal(r, &req) != nil {
			return &SchemaError{Keyword: "required", Pointer: ptr, Reason: "must be an array of property names"}
		}
		if len(req) > 0 {
			out.Set("required", jsonobj.Strings(req))
		}
	}
	if len(props) > 1 {
		out.Set("propertyOrdering", jsonobj.Strings(props.Keys()))
	}
	return nil
}
