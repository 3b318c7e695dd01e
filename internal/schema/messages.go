package schema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// expect says in plain words what u allows, for violation messages.
func expect(u *use) (s string) {
	n, c := u.n, u.c
	if n.kind == kPointer {
		return expect(n.elem) + ", or null"
	}
	if u.enumSet != nil {
		var b strings.Builder
		defer func() {
			// Other keywords still apply to the listed values: say so.
			base := expect(&use{n: u.n, c: u.c, stringOpt: u.stringOpt})
			if base != expect(&use{n: u.n, c: &noConstraints, stringOpt: u.stringOpt}) {
				b.WriteString(", and ")
				b.WriteString(base)
				s = b.String()
			}
		}()
		if len(u.enumSet.raw) == 1 {
			b.WriteString("exactly ")
		} else {
			b.WriteString("one of ")
		}
		const shown = 20
		for k, r := range u.enumSet.raw {
			if k == shown {
				fmt.Fprintf(&b, ", … (%d values in all; the schema lists them)", len(u.enumSet.raw))
				break
			}
			if k > 0 {
				b.WriteString(", ")
			}
			b.Write(r)
		}
		return b.String()
	}
	if u.stringOpt {
		switch n.kind {
		case kInt, kUint:
			return "a string holding an integer, such as \"42\""
		case kFloat:
			return "a string holding a number, such as \"4.2\""
		case kBool:
			return `"true" or "false"`
		}
	}
	switch n.kind {
	case kString:
		parts := []string{"a string"}
		if s := countPhrase(c.minLength, c.maxLength, "character", "characters"); s != "" {
			parts = append(parts, "of "+s)
		}
		if c.pattern != nil {
			parts = append(parts, "matching "+c.patternText)
		}
		if known, _ := jsontext.CheckFormat(c.format, nil); known {
			parts = append(parts, "in "+c.format+" format")
		}
		return strings.Join(parts, " ")
	case kBool:
		return "a boolean"
	case kInt, kUint, kFloat, kNumber:
		what := "a number"
		if n.kind == kInt || n.kind == kUint {
			what = "an integer"
		}
		lo, hi := effectiveBounds(u)
		switch {
		case lo != nil && hi != nil && !lo.exclusive && !hi.exclusive:
			what += " between " + lo.text + " and " + hi.text
		default:
			if lo != nil {
				what += map[bool]string{false: " ≥ ", true: " > "}[lo.exclusive] + lo.text
			}
			if hi != nil {
				if lo != nil {
					what += " and"
				}
				what += map[bool]string{false: " ≤ ", true: " < "}[hi.exclusive] + hi.text
			}
		}
		if c.multipleOf > 0 {
			what += " that is a multiple of " + c.multipleOfText
		}
		return what
	case kBytes:
		return "a base64 string"
	case kSlice:
		return "an array" + itemCount(c.minItems, c.maxItems) + map[bool]string{true: " with no two items equal"}[c.uniqueItems]
	case kArray:
		return "an array of exactly " + plural(n.length, "item", "items")
	case kMap:
		what := "an object"
		if s := countPhrase(c.minProps, c.maxProps, "property", "properties"); s != "" {
			what += " with " + s
		}
		return what
	case kStruct:
		return "an object"
	case kTime:
		return "a date-time string (RFC 3339, such as 2026-12-24T10:00:00Z, seconds 00 to 59)"
	case kText:
		return "a string in the form this parameter accepts"
	case kCustom:
		return "a value in the form this parameter accepts"
	}
	return "any JSON value"
}

func itemCount(lo, hi int) string {
	if s := countPhrase(lo, hi, "item", "items"); s != "" {
		return " of " + s
	}
	return ""
}

// countPhrase says how many of something are allowed, lo and hi being -1
// when unbounded: "exactly 1 item", "1 to 3 properties", "at least 2
// characters", or "" for no bound.
func countPhrase(lo, hi int, one, many string) string {
	switch {
	case lo >= 0 && hi >= 0 && lo == hi:
		return "exactly " + plural(lo, one, many)
	case lo >= 0 && hi >= 0:
		return fmt.Sprintf("%d to %s", lo, plural(hi, one, many))
	case lo >= 0:
		return "at least " + plural(lo, one, many)
	case hi >= 0:
		return "at most " + plural(hi, one, many)
	}
	return ""
}

// plural returns "1 item" or "n items".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// describe says what a raw JSON value is, with its kind, for violations
// of type: string "abc", number 12, null, object {"a":1,…}.
func describe(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	kind := jsontext.KindName(raw[0])
	if kind == "null" {
		return "null"
	}
	return kind + " " + value(raw)
}

// value shows a raw JSON value shortened to about 60 bytes, for
// violations where its kind is right but it is not: "sfo", 12.
func value(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	text := strings.ToValidUTF8(string(raw), "\uFFFD")
	if len(text) > 60 {
		cut := 60
		for cut > 0 && (text[cut]&0xC0) == 0x80 {
			cut--
		}
		text = text[:cut] + "…"
	}
	return text
}
