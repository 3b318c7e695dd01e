package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Patterns that describe what the decoder accepts inside strings.
const (
	base64Pattern   = `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`
	intTextPattern  = `^-?(?:0|[1-9][0-9]*)$`
	uintTextPattern = `^(?:0|[1-9][0-9]*)$`
	numTextPattern  = `^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`
	// A time.Time has no second 60: with format date-time, which allows a
	// leap second (23:59:60), this states that its seconds are 00 to 59.
	timePattern = `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-5][0-9]`
)

// renderer writes schemas as compact JSON with a fixed key order.
type renderer struct {
	b      bytes.Buffer
	root   *node
	output bool
}

// object writes the keys of one JSON object; key order is call order.
type object struct {
	r     *renderer
	count int
}

func (r *renderer) open() *object {
	r.b.WriteByte('{')
	return &object{r: r}
}

// key writes the key k, a JSON Schema keyword: plain ASCII letters (and
// $), which need no escaping.
func (o *object) key(k string) *bytes.Buffer {
	b := &o.r.b
	if o.count > 0 {
		b.WriteByte(',')
	}
	o.count++
	b.WriteByte('"')
	b.WriteString(k)
	b.WriteString(`":`)
	return b
}

func (o *object) str(k, v string) {
	writeString(o.key(k), v)
}

func (o *object) raw(k string, v []byte) {
	o.key(k).Write(v)
}

func (o *object) num(k string, v string) { o.key(k).WriteString(v) }

func (o *object) close() { o.r.b.WriteByte('}') }

// writeString writes s as a JSON string, without HTML escaping.
func writeString(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			raw, _ := marshalNoEscape(s)
			b.Write(raw)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

func marshalNoEscape(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func compact(raw []byte) json.RawMessage {
	if bytes.IndexAny(raw, " \t\r\n") < 0 {
		return raw // nothing to remove
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// document renders the schema of the root use, with $defs for recursive
// types other than the root.
func (r *renderer) document(u *use, defs []*node) []byte {
	root := u
	if r.isObjectRoot(u) {
		// A pointer to an object type decodes from an object only: the
		// root does not allow null.
		for root.n.kind == kPointer {
			root = root.n.elem
		}
	}
	r.use(root, false, true)
	if len(defs) > 0 {
		// Reopen the root object to append $defs.
		r.b.Truncate(r.b.Len() - 1)
		r.b.WriteString(`,"$defs":{`)
		for i, n := range defs {
			if i > 0 {
				r.b.WriteByte(',')
			}
			writeString(&r.b, defName(n.ref))
			r.b.WriteByte(':')
			r.structBody(n, nil)
		}
		r.b.WriteString("}}")
	}
	out := r.b.Bytes()
	if cap(out)-len(out) > len(out)/4 {
		return bytes.Clone(out) // the schema is kept as long as its tool: no large spare room
	}
	return out[:len(out):len(out)]
}

func (r *renderer) isObjectRoot(u *use) bool {
	for u.n.kind == kPointer {
		u = u.n.elem
	}
	return !r.output && (u.n.kind == kStruct || u.n.kind == kMap)
}

func defName(ref string) string { return ref[len("#/$defs/"):] }

// typeName is the JSON Schema type of a node, or "" when the node allows
// any type.
func (r *renderer) typeName(u *use) string {
	n := u.n
	if u.stringOpt {
		return "string"
	}
	switch n.kind {
	case kString, kBytes, kTime:
		return "string"
	case kText:
		if n.custom != nil {
			return ""
		}
		return "string"
	case kBool:
		return "boolean"
	case kInt, kUint:
		return "integer"
	case kFloat, kNumber:
		return "number"
	case kSlice, kArray:
		return "array"
	case kMap, kStruct:
		return "object"
	}
	return ""
}

// use renders one use. nullable adds null to the allowed types; top
// renders a recursive root inline rather than as a reference.
func (r *renderer) use(u *use, nullable bool, top bool) {
	n := u.n
	if n.kind == kPointer {
		r.use(n.elem, true, top)
		return
	}
	if r.output && (n.kind == kSlice || n.kind == kMap || n.kind == kBytes) {
		nullable = true // nil slices and maps marshal as null
	}
	if n.kind == kStruct && n.recursive && !(top && n == r.root) {
		o := r.open()
		ref := n.ref
		if nullable {
			o.key("anyOf")
			r.b.WriteString(`[{"$ref":`)
			writeString(&r.b, ref)
			r.b.WriteString(`},{"type":"null"}]`)
		} else {
			o.str("$ref", ref)
		}
		r.annotations(o, u)
		o.close()
		return
	}
	if (n.kind == kCustom || n.kind == kText) && n.custom != nil {
		if !nullable && !hasAnnotations(u) {
			r.b.Write(n.custom)
			return
		}
		o := r.open()
		if nullable {
			o.key("anyOf")
			r.b.WriteByte('[')
			r.b.Write(n.custom)
			r.b.WriteString(`,{"type":"null"}]`)
		} else {
			o.key("allOf")
			r.b.WriteByte('[')
			r.b.Write(n.custom)
			r.b.WriteByte(']')
		}
		r.annotations(o, u)
		o.close()
		return
	}
	o := r.open()
	if t := r.typeName(u); t != "" {
		if nullable {
			o.key("type")
			r.b.WriteString(`["`)
			r.b.WriteString(t)
			r.b.WriteString(`","null"]`)
		} else {
			o.str("type", t)
		}
	}
	r.annotations(o, u)
	r.keywords(o, u, nullable)
	if n.kind == kStruct {
		r.structKeys(o, n)
	}
	o.close()
}

func hasAnnotations(u *use) bool {
	c := u.c
	return c.title != "" || c.description != "" || c.deprecated || c.def != nil || len(c.examples) > 0
}

// annotations writes title, description, deprecated, default, examples.
func (r *renderer) annotations(o *object, u *use) {
	c := u.c
	if c.title != "" {
		o.str("title", c.title)
	}
	desc := c.description
	if desc == "" && u.n.kind == kStruct && u.n.doc != "" && !u.n.recursive {
		desc = u.n.doc
	}
	if desc != "" {
		o.str("description", desc)
	}
	if c.deprecated {
		o.raw("deprecated", []byte("true"))
	}
	if c.def != nil {
		o.raw("default", c.def)
	}
	if len(c.examples) > 0 {
		o.key("examples")
		r.list(c.examples)
	}
}

func (r *renderer) list(items []json.RawMessage) {
	r.b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			r.b.WriteByte(',')
		}
		r.b.Write(it)
	}
	r.b.WriteByte(']')
}

// keywords writes the assertions of a use.
func (r *renderer) keywords(o *object, u *use, nullable bool) {
	n, c := u.n, u.c
	if u.enumSet != nil {
		o.key("enum")
		items := u.enumSet.raw
		if nullable {
			items = append(items[:len(items):len(items)], json.RawMessage("null"))
		}
		r.list(items)
	}
	switch {
	case u.stringOpt:
		switch n.kind {
		case kInt:
			o.str("pattern", intTextPattern)
		case kUint:
			o.str("pattern", uintTextPattern)
		case kFloat:
			o.str("pattern", numTextPattern)
		case kBool:
			if u.enumSet == nil {
				if nullable {
					o.raw("enum", []byte(`["true","false",null]`))
				} else {
					o.raw("enum", []byte(`["true","false"]`))
				}
			}
		}
		return
	case n.kind == kInt || n.kind == kUint || n.kind == kFloat || n.kind == kNumber:
		lo, hi := effectiveBounds(u)
		if lo != nil {
			o.num(boundKey("minimum", lo.exclusive), lo.text)
		}
		if hi != nil {
			o.num(boundKey("maximum", hi.exclusive), hi.text)
		}
		if c.multipleOf > 0 {
			o.num("multipleOf", c.multipleOfText)
		}
	case n.kind == kString:
		if c.minLength >= 0 {
			o.num("minLength", strconv.Itoa(c.minLength))
		}
		if c.maxLength >= 0 {
			o.num("maxLength", strconv.Itoa(c.maxLength))
		}
		if c.pattern != nil {
			o.str("pattern", c.patternText)
		}
		if c.format != "" {
			o.str("format", c.format)
		}
	case n.kind == kTime:
		o.str("format", "date-time")
		o.str("pattern", timePattern)
	case n.kind == kBytes:
		o.str("contentEncoding", "base64")
		o.str("pattern", base64Pattern)
	case n.kind == kSlice || n.kind == kArray:
		o.key("items")
		r.use(n.elem, false, false)
		minItems, maxItems := c.minItems, c.maxItems
		if n.kind == kArray {
			minItems, maxItems = n.length, n.length
		}
		if minItems >= 0 {
			o.num("minItems", strconv.Itoa(minItems))
		}
		if maxItems >= 0 {
			o.num("maxItems", strconv.Itoa(maxItems))
		}
		if c.uniqueItems {
			o.raw("uniqueItems", []byte("true"))
		}
	case n.kind == kMap:
		o.key("additionalProperties")
		r.use(n.elem, false, false)
		if c.minProps >= 0 {
			o.num("minProperties", strconv.Itoa(c.minProps))
		}
		if c.maxProps >= 0 {
			o.num("maxProperties", strconv.Itoa(c.maxProps))
		}
	}
}

func boundKey(k string, exclusive bool) string {
	if !exclusive {
		return k
	}
	if k == "minimum" {
		return "exclusiveMinimum"
	}
	return "exclusiveMaximum"
}

// effectiveBounds intersects a use's bounds with its Go type's range, for
// integer kinds smaller than 64 bits and for unsigned kinds.
func effectiveBounds(u *use) (lo, hi *bound) {
	lo, hi = u.c.min, u.c.max
	var tlo, thi *bound
	switch u.n.kind {
	case kInt:
		if u.n.bits < 64 {
			m := int64(1) << (u.n.bits - 1)
			tlo = &bound{v: float64(-m), text: strconv.FormatInt(-m, 10)}
			thi = &bound{v: float64(m - 1), text: strconv.FormatInt(m-1, 10)}
		}
	case kUint:
		tlo = &bound{v: 0, text: "0"}
		if u.n.bits < 64 {
			m := uint64(1)<<u.n.bits - 1
			thi = &bound{v: float64(m), text: strconv.FormatUint(m, 10)}
		}
	case kFloat:
		if u.n.bits == 32 {
			tlo = &bound{v: -math.MaxFloat32, text: strconv.FormatFloat(-math.MaxFloat32, 'g', -1, 32)}
			thi = &bound{v: math.MaxFloat32, text: strconv.FormatFloat(math.MaxFloat32, 'g', -1, 32)}
		}
	}
	if tlo != nil && (lo == nil || lo.v < tlo.v) {
		lo = tlo
	}
	if thi != nil && (hi == nil || hi.v > thi.v) {
		hi = thi
	}
	return lo, hi
}

// structKeys writes the keys of an object schema for a struct.
func (r *renderer) structKeys(o *object, n *node) {
	o.key("properties")
	r.b.WriteByte('{')
	for i, f := range n.fields {
		if i > 0 {
			r.b.WriteByte(',')
		}
		writeString(&r.b, f.name)
		r.b.WriteByte(':')
		r.use(f.u, false, false)
	}
	r.b.WriteByte('}')
	var required int
	for _, f := range n.fields {
		if f.required {
			required++
		}
	}
	if required > 0 {
		o.key("required")
		r.b.WriteByte('[')
		k := 0
		for _, f := range n.fields {
			if f.required {
				if k > 0 {
					r.b.WriteByte(',')
				}
				k++
				writeString(&r.b, f.name)
			}
		}
		r.b.WriteByte(']')
	}
	o.raw("additionalProperties", []byte("false"))
}

// structBody renders a struct node's schema as a $defs entry.
func (r *renderer) structBody(n *node, u *use) {
	o := r.open()
	o.str("type", "object")
	if n.doc != "" {
		o.str("description", n.doc)
	}
	r.structKeys(o, n)
	o.close()
}
