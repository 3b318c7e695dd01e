package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/jsonschema"
	"github.com/miniopenclaw/tool/internal/jsontext"
)

// keywordTags are the struct tags that set a JSON Schema keyword of the
// same name on a field's property schema.
var keywordTags = []string{
	"description", "title", "enum", "default", "examples",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "pattern", "format",
	"minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties", "deprecated",
}

// constraints are the keywords one use of a type carries.
type constraints struct {
	description string
	title       string
	deprecated  bool

	enum     []json.RawMessage // canonical JSON of each allowed value
	examples []json.RawMessage
	def      json.RawMessage // the default, canonical JSON

	min, max       *bound
	multipleOf     float64
	multipleOfText string
	multipleOfLit  string // exact, as JSON: the tag when it is JSON, else multipleOfText

	minLength, maxLength int // -1: unset
	pattern              *jsonschema.Charged
	patternText          string
	format               string

	minItems, maxItems int // -1: unset
	uniqueItems        bool

	minProps, maxProps int // -1: unset
}

type bound struct {
	v         float64
	exclusive bool
	text      string // as written in the tag, for the schema
}

func newConstraints() constraints {
	return constraints{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
}

// noConstraints is what every use without keywords of its own points to
// (most uses: elements, pointers, untagged fields), so that New does not
// allocate a constraints for each. Nothing writes to it.
var noConstraints = newConstraints()

// none reports whether c carries no keyword: c equals newConstraints().
// TestConstraintsNone sets each field in turn, so a field added later
// cannot be missed here.
func (c *constraints) none() bool {
	return c.description == "" && c.title == "" && !c.deprecated &&
		c.enum == nil && c.examples == nil && c.def == nil &&
		c.min == nil && c.max == nil && c.multipleOf == 0 && c.multipleOfText == "" && c.multipleOfLit == "" &&
		c.minLength == -1 && c.maxLength == -1 && c.pattern == nil && c.patternText == "" && c.format == "" &&
		c.minItems == -1 && c.maxItems == -1 && !c.uniqueItems &&
		c.minProps == -1 && c.maxProps == -1
}

// tagSet holds the tags of one field, read in one pass over the tag
// (reflect.StructTag.Lookup would scan it once per keyword).
type tagSet struct {
	n            int // tags held in keys and values
	keys, values [8]string
	more         []string // key, value, key, value… beyond the first 8
}

// readTags reads tag into ts, which the caller provides so that it can
// live on the caller's stack.
func readTags(ts *tagSet, tag reflect.StructTag) {
	ts.n, ts.more = 0, nil
	s := string(tag)
	for s != "" {
		i := 0
		for i < len(s) && s[i] == ' ' {
			i++
		}
		s = s[i:]
		if s == "" {
			break
		}
		i = 0
		for i < len(s) && s[i] > ' ' && s[i] != ':' && s[i] != '"' && s[i] != 0x7f {
			i++
		}
		if i == 0 || i+1 >= len(s) || s[i] != ':' || s[i+1] != '"' {
			break
		}
		name := s[:i]
		s = s[i+1:]
		i = 1
		escaped := false
		for i < len(s) && s[i] != '"' {
			if s[i] == '\\' {
				escaped = true
				i++
			}
			i++
		}
		if i >= len(s) {
			break
		}
		value := s[1:i]
		if escaped {
			v, err := strconv.Unquote(s[:i+1])
			if err != nil {
				break
			}
			value = v
		}
		s = s[i+1:]
		if ts.n < len(ts.keys) {
			ts.keys[ts.n], ts.values[ts.n] = name, value
			ts.n++
		} else {
			ts.more = append(ts.more, name, value)
		}
	}
}

// Lookup returns the value of the first tag with the given key.
func (ts *tagSet) Lookup(key string) (string, bool) {
	for i, k := range ts.keys[:ts.n] {
		if k == key {
			return ts.values[i], true
		}
	}
	for i := 0; i+1 < len(ts.more); i += 2 {
		if ts.more[i] == key {
			return ts.more[i+1], true
		}
	}
	return "", false
}

// any reports whether one of the tags has a key for which keys is true.
func (ts *tagSet) any(keys func(string) bool) bool {
	for _, k := range ts.keys[:ts.n] {
		if keys(k) {
			return true
		}
	}
	for i := 0; i < len(ts.more); i += 2 {
		if keys(ts.more[i]) {
			return true
		}
	}
	return false
}

// Get returns the value of the tag with the given key, or "".
func (ts *tagSet) Get(key string) string {
	v, _ := ts.Lookup(key)
	return v
}

// patterns caches compiled pattern tags: tags are fixed source text, so
// the cache is bounded by the program's own types. A tag's pattern is
// bounded and its matches charged as a schema's are (a tag's
// [a-z]{1000}! matched against 1 MB of a model's text ran for more than
// ten minutes): one whose program would pass 16,384 instructions is
// refused.
var patterns sync.Map // string -> *jsonschema.Charged

func compilePattern(p string) (*jsonschema.Charged, error) {
	if re, ok := patterns.Load(p); ok {
		return re.(*jsonschema.Charged), nil
	}
	re, err := jsonschema.CompileCharged(p)
	if err != nil {
		return nil, err
	}
	patterns.Store(p, re)
	return re, nil
}

// countTag reads the count tag name, or returns absent when the field
// has no such tag; a value that is not a whole number ≥ 0 is an error.
func countTag(tag *tagSet, name string, absent int) (int, error) {
	v, ok := tag.Lookup(name)
	if !ok {
		return absent, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return absent, fmt.Errorf("%s tag %q: want a whole number ≥ 0", name, v)
	}
	return n, nil
}

// parsedTag reports whether parseTags reads the tag key; a field with
// none of them (as most output fields, with a json tag only) skips it. A
// switch: New asks for every tag of every field, and a map lookup cost
// more.
func parsedTag(key string) bool {
	switch key {
	case "jsonschema", "description", "title", "deprecated",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
		"uniqueItems", "pattern", "format":
		return true
	}
	return false
}

// parseTags reads the keyword tags of a struct field.
func parseTags(tag *tagSet) (constraints, error) {
	c := newConstraints()
	if !tag.any(parsedTag) {
		return c, nil
	}
	if d, ok := tag.Lookup("jsonschema"); ok {
		if k, _, found := strings.Cut(d, "="); found && !strings.ContainsAny(k, " ,") {
			return c, fmt.Errorf(`jsonschema tag %q: the whole tag is the description; use tags named after keywords, such as %s:"…"`, d, k)
		}
		c.description = d
	}
	if d, ok := tag.Lookup("description"); ok {
		c.description = d
	}
	c.title = tag.Get("title")
	if v, ok := tag.Lookup("deprecated"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("deprecated tag %q: want true or false", v)
		}
		c.deprecated = b
	}
	var err error
	num := func(name string) (*bound, error) {
		v, ok := tag.Lookup(name)
		if !ok {
			return nil, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%s tag %q: want a number", name, v)
		}
		return &bound{v: f, text: canonicalNumber(v)}, nil
	}
	if c.min, err = num("minimum"); err != nil {
		return c, err
	}
	if c.max, err = num("maximum"); err != nil {
		return c, err
	}
	if b, err := num("exclusiveMinimum"); err != nil {
		return c, err
	} else if b != nil {
		if c.min != nil {
			return c, fmt.Errorf("minimum and exclusiveMinimum tags: use one")
		}
		b.exclusive, c.min = true, b
	}
	if b, err := num("exclusiveMaximum"); err != nil {
		return c, err
	} else if b != nil {
		if c.max != nil {
			return c, fmt.Errorf("maximum and exclusiveMaximum tags: use one")
		}
		b.exclusive, c.max = true, b
	}
	if b, err := num("multipleOf"); err != nil {
		return c, err
	} else if b != nil {
		v := tag.Get("multipleOf")
		if b.v <= 0 {
			return c, fmt.Errorf("multipleOf tag %q: want a number greater than 0", b.text)
		}
		lit := b.text
		if l, next, err := jsontext.ReadNumber([]byte(v), 0); err == nil && next == len(v) {
			lit = string(l)
		}
		c.multipleOf, c.multipleOfText, c.multipleOfLit = b.v, b.text, lit
	}
	if c.min != nil && c.max != nil && (c.min.v > c.max.v || c.min.v == c.max.v && (c.min.exclusive || c.max.exclusive)) {
		return c, fmt.Errorf("the minimum %s is above the maximum %s: no value is allowed", c.min.text, c.max.text)
	}
	// One call per tag, not a loop over pointers into c, which would
	// move c to the heap.
	if c.minLength, err = countTag(tag, "minLength", c.minLength); err != nil {
		return c, err
	}
	if c.maxLength, err = countTag(tag, "maxLength", c.maxLength); err != nil {
		return c, err
	}
	if c.minItems, err = countTag(tag, "minItems", c.minItems); err != nil {
		return c, err
	}
	if c.maxItems, err = countTag(tag, "maxItems", c.maxItems); err != nil {
		return c, err
	}
	if c.minProps, err = countTag(tag, "minProperties", c.minProps); err != nil {
		return c, err
	}
	if c.maxProps, err = countTag(tag, "maxProperties", c.maxProps); err != nil {
		return c, err
	}
	if c.minLength > c.maxLength && c.maxLength >= 0 || c.minItems > c.maxItems && c.maxItems >= 0 || c.minProps > c.maxProps && c.maxProps >= 0 {
		return c, fmt.Errorf("a min… tag is above its max… tag: no value is allowed")
	}
	if v, ok := tag.Lookup("uniqueItems"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("uniqueItems tag %q: want true or false", v)
		}
		c.uniqueItems = b
	}
	if v, ok := tag.Lookup("pattern"); ok {
		re, err := compilePattern(v)
		if err != nil {
			return c, fmt.Errorf("pattern tag %q: %v", v, err)
		}
		c.pattern, c.patternText = re, v
	}
	c.format = tag.Get("format")
	return c, nil
}

// canonicalNumber returns a number tag as JSON number text.
func canonicalNumber(s string) string {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return s
}

// splitList splits a list tag: a JSON array when it starts with '[', else
// comma-separated items.
func splitList(v string, stringKind bool) ([]json.RawMessage, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "[") {
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(v), &items); err != nil {
			return nil, fmt.Errorf("%q is not a JSON array: %v", v, err)
		}
		return items, nil
	}
	parts := strings.Split(v, ",")
	items := make([]json.RawMessage, len(parts))
	for i, p := range parts {
		if stringKind {
			items[i] = quote(p)
		} else {
			items[i] = json.RawMessage(strings.TrimSpace(p))
		}
	}
	return items, nil
}

// valueTag returns the JSON text of a default tag value: the raw text,
// quoted, for string kinds; the text itself otherwise.
func valueTag(v string, stringKind bool) json.RawMessage {
	if stringKind {
		return quote(v)
	}
	return json.RawMessage(strings.TrimSpace(v))
}

func quote(s string) json.RawMessage {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // strings always marshal
			return b
		}
	}
	b := make([]byte, 0, len(s)+2) // nothing to escape
	return append(append(append(b, '"'), s...), '"')
}

// runeCount counts the code points of a string, as JSON Schema's
// minLength and maxLength do.
func runeCount(b []byte) int { return utf8.RuneCount(b) }
