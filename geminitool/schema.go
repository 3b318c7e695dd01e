package geminitool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
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
	// maxInlinedBytes bounds the definitions inlined for one schema, in
	// bytes of their text, counted each time one is inlined: references
	// that fan out (three to a definition that holds three to the next…)
	// made 256 KiB a schema of gigabytes.
	maxInlinedBytes = 4 << 20
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
//   - an "enum" or "const" of numbers or booleans (Gemini's enum holds
//     strings only) is moved into the description the same way, as
//     "Constraints: enum=[1,2,3]."; the type is kept, or taken from the
//     values (INTEGER when all are integers, else NUMBER, or BOOLEAN)
//     when the schema has none;
//   - "additionalProperties": false is dropped (Gemini's objects take only
//     their properties), and annotations such as $schema, $id, $comment
//     and readOnly are dropped.
//
// Schema returns a [*SchemaError] naming the keyword for what the dialect
// cannot express: a recursive $ref, a reference outside the document,
// allOf, not, if/then/else, dependentRequired, dependentSchemas,
// prefixItems, patternProperties, an open object below the root
// (additionalProperties true or a schema, or no properties), an array
// without items, an enum that mixes strings with other values or holds
// objects or arrays, an enum or const whose values do not fit the
// schema's type, an object, array or null const, several non-null types
// in one "type", a schema that accepts any value, or references whose
// inlining would copy more than 4 MiB of definitions.
//
// Schema is [Convert] without its report.
func Schema(params json.RawMessage) (json.RawMessage, error) {
	s, _, err := Convert(params)
	return s, err
}

// Convert converts a schema as [Schema] does and also reports what the
// conversion lost for the model: one line per keyword moved into the
// description ("/properties/p: enum of integers moved into the
// description (…)"), in document order, empty when the model sees every
// constraint in the dialect's own keywords. Keywords dropped because they
// change nothing for Gemini (additionalProperties false, $schema, $id,
// readOnly, …) are not reported.
func Convert(params json.RawMessage) (schema json.RawMessage, lossy []string, err error) {
	root, err := jsonobj.Parse(params)
	if err != nil {
		return nil, nil, &SchemaError{Keyword: "type", Reason: "the parameters schema is not a JSON object: " + err.Error()}
	}
	if t, ok := root.Get("type"); !ok || string(bytes.TrimSpace(t)) != `"object"` {
		return nil, nil, &SchemaError{Keyword: "type", Reason: `the root must be an object schema with "type":"object"`}
	}
	c := &geminiConv{defs: map[string]json.RawMessage{}, active: map[string]bool{}}
	for _, dk := range []string{"$defs", "definitions"} {
		raw, ok := root.Get(dk)
		if !ok {
			continue
		}
		defs, err := jsonobj.Parse(raw)
		if err != nil {
			return nil, nil, &SchemaError{Keyword: dk, Pointer: "/" + dk, Reason: "must be an object of schemas"}
		}
		for _, d := range defs {
			c.defs["#/"+dk+"/"+schemarewrite.EscapePointer(d.Key)] = d.Value
		}
	}
	c.defs["#"] = params
	out, err := c.node(params, "", 0, true)
	if err != nil {
		return nil, nil, err
	}
	return out, c.lossy, nil
}

type geminiConv struct {
	defs    map[string]json.RawMessage
	active  map[string]bool // references being inlined: a repeat is recursion
	nodes   int
	inlined int // bytes of definitions inlined
	lossy   []string
}

// lose records that the keyword at ptr was moved into the description.
func (c *geminiConv) lose(ptr, what string) {
	where := ptr
	if where == "" {
		where = "(root)"
	}
	c.lossy = append(c.lossy, where+": "+what)
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
		if c.inlined += len(target); c.inlined > maxInlinedBytes {
			return nil, &SchemaError{Keyword: "$ref", Pointer: ptr, Reason: fmt.Sprintf("inlining the references (the dialect has none) would copy more than %d bytes of definitions; refer to fewer, or to smaller ones", maxInlinedBytes)}
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
		before := len(c.lossy)
		conv, err := c.node(rest, ptr, depth+1, false)
		if err != nil {
			// The siblings alone may not be a full schema (no type):
			// take their kept keywords only.
			conv = rest
			c.lossy = c.lossy[:before]
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

	// enum and const. Gemini's enum holds strings only: an enum or const
	// of numbers or booleans becomes a constraint in the description.
	var enum []string
	if e, ok := o.Get("enum"); ok {
		var vals []json.RawMessage
		if json.Unmarshal(e, &vals) != nil {
			return nil, &SchemaError{Keyword: "enum", Pointer: ptr, Reason: "must be an array"}
		}
		var others []json.RawMessage // values that are neither strings nor null
		for _, v := range vals {
			var s string
			switch {
			case string(bytes.TrimSpace(v)) == "null":
				nullable = true
			case json.Unmarshal(v, &s) == nil:
				enum = append(enum, s)
			default:
				others = append(others, v)
			}
		}
		switch {
		case len(others) == 0:
			if gtype == "" {
				gtype = "STRING"
			}
			if gtype != "STRING" {
				return nil, &SchemaError{Keyword: "enum", Pointer: ptr, Reason: fmt.Sprintf("an enum of strings on a schema of type %s cannot be expressed; the Gemini schema dialect has enums of strings only", strings.ToLower(gtype))}
			}
		case len(enum) > 0:
			return nil, &SchemaError{Keyword: "enum", Pointer: ptr, Reason: "an enum that mixes strings with other values cannot be expressed; the Gemini schema dialect has enums of strings only, and one type per schema"}
		default:
			kind, err := valuesType(others, gtype, "enum", ptr)
			if err != nil {
				return nil, err
			}
			gtype = kind
			constraints = append(constraints, "enum="+jsonobj.Compact(e))
			c.lose(ptr, "enum of "+typeWords[kind]+" moved into the description (the Gemini schema dialect has enums of strings only)")
		}
	}
	if cv, ok := o.Get("const"); ok {
		var s string
		switch k := jsonobj.Kind(cv); {
		case json.Unmarshal(cv, &s) == nil:
			enum = []string{s}
			if gtype == "" {
				gtype = "STRING"
			}
		case k == "number" || k == "boolean":
			kind, err := valuesType([]json.RawMessage{cv}, gtype, "const", ptr)
			if err != nil {
				return nil, err
			}
			gtype = kind
			constraints = append(constraints, "const="+jsonobj.Compact(cv))
			c.lose(ptr, "const of "+typeWords[kind]+" moved into the description (a const is expressed as a one-value enum, and the Gemini schema dialect has enums of strings only)")
		default:
			return nil, &SchemaError{Keyword: "const", Pointer: ptr, Reason: "only a string, number or boolean const can be expressed; got " + string(cv)}
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
				c.lose(ptr, fmt.Sprintf("format %q moved into the description (%s)", f, knownFormats(gtype)))
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
			c.lose(ptr, k+" moved into the description (Gemini's schema dialect lacks it)")
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

// typeWords names the values of a Gemini type, for reports.
var typeWords = map[string]string{"INTEGER": "integers", "NUMBER": "numbers", "BOOLEAN": "booleans"}

// knownFormats says which formats Gemini knows for values of gtype.
func knownFormats(gtype string) string {
	switch gtype {
	case "STRING":
		return "Gemini knows date-time and enum for strings"
	case "INTEGER":
		return "Gemini knows int32 and int64 for integers"
	case "NUMBER":
		return "Gemini knows float and double for numbers"
	}
	return "Gemini knows no format for this type"
}

// valuesType returns the Gemini type of the enum or const values vals
// (numbers or booleans, none a string or null): gtype when the schema has
// one that fits them, else INTEGER when all are integers (1.0 is one, as
// in JSON Schema), NUMBER when all are numbers, BOOLEAN when all are
// booleans. Values of several kinds, objects and arrays, and values that
// do not fit gtype are refused with a *SchemaError for keyword.
func valuesType(vals []json.RawMessage, gtype, keyword, ptr string) (string, error) {
	kind := ""
	for _, v := range vals {
		var k string
		switch jsonobj.Kind(v) {
		case "boolean":
			k = "BOOLEAN"
		case "number":
			k = "INTEGER"
			if r, ok := new(big.Rat).SetString(strings.TrimSpace(string(v))); !ok || !r.IsInt() {
				k = "NUMBER"
			}
		default:
			return "", &SchemaError{Keyword: keyword, Pointer: ptr, Reason: "an " + keyword + " of objects or arrays cannot be expressed; the Gemini schema dialect has enums of strings only; got " + jsonobj.Compact(v)}
		}
		switch {
		case kind == "" || kind == k:
			kind = k
		case kind != "BOOLEAN" && k != "BOOLEAN":
			kind = "NUMBER" // integers and other numbers
		default:
			return "", &SchemaError{Keyword: keyword, Pointer: ptr, Reason: "an " + keyword + " that mixes numbers and booleans cannot be expressed; the Gemini schema dialect has one type per schema"}
		}
	}
	switch {
	case gtype == "":
		return kind, nil
	case gtype == kind, gtype == "NUMBER" && kind == "INTEGER", gtype == "INTEGER" && kind == "NUMBER":
		// An integer schema with a value such as 2.5 keeps its type: the
		// value can never be valid, and validation still says so.
		return gtype, nil
	}
	return "", &SchemaError{Keyword: keyword, Pointer: ptr, Reason: fmt.Sprintf("values of type %s on a schema of type %s cannot be expressed", strings.ToLower(kind), strings.ToLower(gtype))}
}
