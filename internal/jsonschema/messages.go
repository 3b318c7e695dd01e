package jsonschema

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/internal/suggest"
)

// gotWidth is about how many characters of a value a message shows.
const gotWidth = 60

// got describes the value at tape index i for a violation's Got field,
// prefixed with its JSON type when withType is set.
func (v *validator) got(i int32, withType bool) string {
	t := &v.tape[i]
	text := shortJSON(v.data[t.start:t.end], gotWidth)
	if !withType {
		return text
	}
	switch t.kind {
	case kNull:
		return "null"
	case kString:
		return "string " + text
	case kNumber:
		return "number " + text
	case kTrue, kFalse:
		return "boolean " + text
	case kObject:
		return "object " + text
	case kArray:
		return "array " + text
	}
	return text
}

// shortJSON returns JSON text without insignificant whitespace, cut to
// about n characters at a character boundary.
func shortJSON(raw []byte, n int) string {
	if len(raw) > 4*n+16 {
		raw = raw[:4*n+16]
	}
	c := compact(raw)
	if utf8.RuneCount(c) <= n {
		return visible(string(c))
	}
	i, count := 0, 0
	for i < len(c) && count < n-1 {
		_, size := utf8.DecodeRune(c[i:])
		i += size
		count++
	}
	return visible(strings.ToValidUTF8(string(c[:i]), "\uFFFD")) + "…"
}

// quote returns s as a JSON string with hidden characters made visible,
// for messages.
func quote(s string) string { return visible(string(appendJSONString(nil, s))) }

// visible escapes the characters that would hide or reorder text in a
// message: controls, and format characters such as U+202E (right-to-left
// override) and U+200B (zero width space). They appear as \uXXXX.
func visible(s string) string { return jsontext.Visible(s) }

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// countPhrase says how many of something are allowed: "at least 2 items",
// "1 to 3 properties".
func countPhrase(lo, hi int64, one, many string) string {
	switch {
	case lo >= 0 && hi >= 0 && lo == hi:
		return "exactly " + plural(lo, one, many)
	case lo > 0 && hi >= 0:
		return fmt.Sprintf("%d to %s", lo, plural(hi, one, many))
	case hi >= 0:
		return "at most " + plural(hi, one, many)
	case lo >= 0:
		return "at least " + plural(lo, one, many)
	}
	return "any number of " + many
}

// describe says in plain words what schema n allows.
func describe(n *node) string { return describeDepth(n, 0) }

func describeList(alts []*node) string { return joinDescs(alts, 1) }

func describeDepth(n *node, depth int) string {
	n = deref(n)
	if n.boolean {
		if n.accept {
			return "any value"
		}
		return "nothing"
	}
	if n.hasConst {
		return "exactly " + shortJSON(n.constVal.raw, gotWidth)
	}
	if n.enum != nil {
		return enumPhrase(n.enum)
	}
	types := n.types
	if types == 0 {
		switch {
		case n.pattern != nil || n.minLen >= 0 || n.maxLen >= 0 || n.format != fNone:
			types = tString
		case n.minimum != nil || n.maximum != nil || n.exclMin != nil || n.exclMax != nil || n.multipleOf != nil:
			types = tNumber
		case n.props != nil || n.required != nil || n.additional != nil || n.minProps >= 0 || n.maxProps >= 0:
			types = tObject
		case n.items != nil || n.prefixItems != nil || n.minItems >= 0 || n.maxItems >= 0 || n.contains != nil:
			types = tArray
		}
	}
	if types == 0 {
		if depth < 2 {
			switch {
			case n.anyOf != nil:
				return "one of: " + joinDescs(n.anyOf, depth+1)
			case n.oneOf != nil:
				return "exactly one of: " + joinDescs(n.oneOf, depth+1)
			case len(n.allOf) == 1:
				return describeDepth(n.allOf[0], depth+1)
			case n.ref != nil:
				return describeDepth(n.ref, depth+1)
			}
		}
		if n.not != nil && depth < 2 {
			return "anything except " + strings.TrimPrefix(describeDepth(n.not, depth+1), "exactly ")
		}
		if n.anyOf != nil || n.oneOf != nil || n.allOf != nil || n.ref != nil || n.ifN != nil {
			return "a value matching the schema at " + pointerOrRoot(n.loc)
		}
		return "any value"
	}
	var parts []string
	if types&tString != 0 {
		parts = append(parts, stringPhrase(n))
	}
	if types&tInteger != 0 && types&tNumber == 0 {
		parts = append(parts, numberPhrase(n, "an integer"))
	}
	if types&tNumber != 0 {
		parts = append(parts, numberPhrase(n, "a number"))
	}
	if types&tBoolean != 0 {
		parts = append(parts, "a boolean")
	}
	if types&tObject != 0 {
		parts = append(parts, objectPhrase(n, depth))
	}
	if types&tArray != 0 {
		parts = append(parts, arrayPhrase(n, depth))
	}
	if types&tNull != 0 {
		parts = append(parts, "null")
	}
	return joinOr(parts)
}

func joinDescs(alts []*node, depth int) string {
	parts := make([]string, 0, min(len(alts), maxListed+1))
	for i, m := range alts {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(alts)-i))
			break
		}
		parts = append(parts, describeDepth(m, depth))
	}
	return strings.Join(parts, "; ")
}

func joinOr(parts []string) string {
	switch len(parts) {
	case 1:
		return parts[0]
	case 2:
		return parts[0] + " or " + parts[1]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

const maxListed = 20

func enumPhrase(enum []*jval) string {
	switch len(enum) {
	case 0:
		return "nothing (the list of allowed values is empty)"
	case 1:
		return "exactly " + shortJSON(enum[0].raw, gotWidth)
	}
	var b strings.Builder
	b.WriteString("one of ")
	for i, e := range enum {
		if i == maxListed {
			fmt.Fprintf(&b, ", … (%d more)", len(enum)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(shortJSON(e.raw, gotWidth))
	}
	return b.String()
}

var formatNouns = map[uint8]string{
	fDateTime: "a date-time string (RFC 3339, like 2026-12-24T09:30:00Z)",
	fDate:     "a date string (YYYY-MM-DD)",
	fTime:     "a time string (HH:MM:SS with a zone, like 09:30:00Z)",
	fEmail:    "an email address",
	fUUID:     "a UUID string",
	fIPv4:     "an IPv4 address",
	fIPv6:     "an IPv6 address",
	fURI:      "an absolute URI",
}

func stringPhrase(n *node) string {
	s := "a string"
	if n.format != fNone {
		s = formatNouns[n.format]
	}
	if n.minLen >= 0 || n.maxLen >= 0 {
		lo := n.minLen
		if lo == 0 {
			lo = -1
		}
		s += " of " + countPhrase(lo, n.maxLen, "character", "characters")
	}
	if n.pattern != nil {
		s += " matching " + visible(shorten(n.patternSrc, 2*gotWidth))
	}
	return s
}

func numberPhrase(n *node, noun string) string {
	var lower, upper string
	if n.exclMin != nil {
		lower = "greater than " + n.exclMin.lit
	} else if n.minimum != nil {
		lower = "of at least " + n.minimum.lit
	}
	if n.exclMax != nil {
		upper = "less than " + n.exclMax.lit
	} else if n.maximum != nil {
		upper = "of at most " + n.maximum.lit
	}
	s := noun
	switch {
	case n.minimum != nil && n.maximum != nil && n.exclMin == nil && n.exclMax == nil:
		s += " between " + n.minimum.lit + " and " + n.maximum.lit
	case lower != "" && upper != "":
		s += " " + lower + " and " + strings.TrimPrefix(upper, "of ")
	case lower != "":
		s += " " + lower
	case upper != "":
		s += " " + upper
	}
	if n.multipleOf != nil {
		s += " that is a multiple of " + n.multipleOf.lit
	}
	return s
}

func objectPhrase(n *node, depth int) string {
	s := "an object"
	if depth == 0 {
		return s
	}
	for _, p := range n.props {
		pn := deref(p.n)
		if pn.hasConst {
			return s + " with " + quote(p.name) + ": " + shortJSON(pn.constVal.raw, 30)
		}
		if len(pn.enum) == 1 {
			return s + " with " + quote(p.name) + ": " + shortJSON(pn.enum[0].raw, 30)
		}
	}
	if len(n.required) > 0 && len(n.required) <= 5 {
		return s + " with " + strings.Join(n.required, ", ")
	}
	return s
}

func arrayPhrase(n *node, depth int) string {
	s := "an array"
	if n.minItems >= 0 || n.maxItems >= 0 {
		lo := n.minItems
		if lo == 0 {
			lo = -1
		}
		s += " of " + countPhrase(lo, n.maxItems, "item", "items")
	}
	if n.items != nil && n.prefixItems == nil && depth < 2 {
		if d := describeDepth(n.items, depth+1); d != "any value" {
			s += " (each item " + d + ")"
		}
	}
	return s
}

// stringHint suggests a fix for a string that fails n's string keywords:
// the same text in other case or without surrounding space when that
// passes, or how to write the format.
func (v *validator) stringHint(n *node, t *tnode) string {
	if raw := v.str(t); len(raw) <= 256 {
		s := string(raw)
		for _, alt := range []string{strings.ToUpper(s), strings.ToLower(s), strings.TrimSpace(s)} {
			if alt != s && v.stringOKText(n, alt) {
				return fmt.Sprintf("did you mean %s?", quote(alt))
			}
		}
	}
	return formatHint(n)
}

func formatHint(n *node) string {
	switch n.format {
	case fDate:
		return "use YYYY-MM-DD, like 2026-12-24"
	case fDateTime:
		return "use RFC 3339 with a zone, like 2026-12-24T09:30:00Z"
	case fTime:
		return "use HH:MM:SS with a zone, like 09:30:00Z"
	}
	return ""
}

// enumHint suggests an allowed string close to the one given.
func (v *validator) enumHint(n *node, i int32) string {
	t := &v.tape[i]
	if t.kind != kString {
		return ""
	}
	got := v.str(t)
	if len(got) > 64 { // no suggestion for long strings
		return ""
	}
	var names []string
	for _, e := range n.enum {
		if e.kind == kString {
			names = append(names, e.s)
		}
	}
	if best, ok := closest(string(got), names); ok {
		return "did you mean " + quote(best) + "?"
	}
	return ""
}

// unknownProperty reports member k of the object at i, which no
// properties or patternProperties entry admits and additionalProperties
// forbids.
func (v *validator) unknownProperty(n *node, i, k int32) {
	if !v.room() {
		return
	}
	key := keyText(v.str(&v.tape[k]))
	var allowed []string
	for _, p := range n.props {
		allowed = append(allowed, p.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no property %s", quote(shorten(key, gotWidth)))
	switch {
	case len(allowed) == 0 && len(n.patternProps) == 0:
		b.WriteString(" (this object takes no properties)")
	default:
		b.WriteString(" (allowed: ")
		for j, a := range allowed {
			if j == maxListed {
				fmt.Fprintf(&b, ", … (%d more)", len(allowed)-j)
				break
			}
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(visible(shorten(a, gotWidth)))
		}
		for j, pp := range n.patternProps {
			if j == maxListed {
				b.WriteString(", …")
				break
			}
			if j > 0 || len(allowed) > 0 {
				b.WriteString(", ")
			}
			b.WriteString("names matching " + visible(shorten(pp.src, gotWidth)))
		}
		b.WriteString(")")
	}
	hint := ""
	if best, ok := closest(key, allowed); ok {
		hint = "did you mean " + quote(best) + "?"
	}
	// Ordered by the key, not the value.
	v.record(vrec{off: v.tape[k].start, v: Violation{Pointer: v.pointer(), Expected: b.String(), Got: v.got(k+1, false), Hint: hint}})
}

// maxSuggestKeys bounds the keys of one object that a hint about a
// missing property compares with its name.
const maxSuggestKeys = 200

// missing reports that the object at i lacks property name.
func (v *validator) missing(n *node, i int32, name, expected string) {
	if !v.room() {
		return
	}
	t := &v.tape[i]
	hint := ""
	// A key close to the missing name that the schema does not know.
	var sent []string
	for k := i + 1; k < t.next && len(sent) < maxSuggestKeys; k = v.tape[k+1].next {
		key := v.str(&v.tape[k])
		if len(key) <= 2*len(name)+8 && n.prop(key) == nil { // longer keys are not close
			sent = append(sent, string(key))
		}
	}
	if best, ok := closest(name, sent); ok {
		hint = "rename " + quote(shorten(best, gotWidth)) + " to " + quote(name)
	}
	ptr := v.pointer()
	ptr = string(appendToken([]byte(ptr+"/"), []byte(name)))
	v.record(vrec{off: t.end - 1, v: Violation{Pointer: ptr, Expected: expected, Got: "nothing", Hint: hint}})
}

// keyText returns key, or for a long key a prefix long enough for
// shorten(…, gotWidth) and too long for a suggestion.
func keyText(key []byte) string {
	return string(key[:min(len(key), 4*gotWidth+4)])
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "…"
}

// closest returns the candidate that equals s ignoring case, or failing
// that the nearest one within a small edit distance.
func closest(s string, candidates []string) (string, bool) {
	if c := suggest.Closest(s, candidates, 1); len(c) > 0 {
		return c[0], true
	}
	return "", false
}
