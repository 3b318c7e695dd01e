// Package showtext makes text that someone else wrote (a server, a model,
// a command run in a sandbox) safe to show on a terminal or to a person:
// every character that is not graphic is written as a visible escape, so
// that printing the text cannot drive the terminal (clear it, set its
// title, write the clipboard with OSC 52, move the cursor over what was
// shown) or reorder and hide what a person reads (U+202E, U+200B, line
// separators).
//
// The rule is Unicode's, not a list: a character is shown as itself only
// when [unicode.IsGraphic] holds for it (letters, marks, numbers,
// punctuation, symbols and spaces). Controls, format characters, line and
// paragraph separators, private-use, surrogate and unassigned code points
// are escaped, and so is every byte that is not valid UTF-8.
package showtext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Shown reports whether r is shown as itself: [unicode.IsGraphic] holds
// for it. Every other character is written as an escape.
func Shown(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 0x20 && r < 0x7f
	}
	return unicode.IsGraphic(r)
}

// Text returns s with every character that is not shown as itself (see
// [Shown]) but newline and tab written as an escape in Go's syntax: \r,
// \x1b for the other ASCII controls, \u202e, \U000e0041, and \xff for a
// byte that is not valid UTF-8. Text that needs none of this is returned
// as it is, without allocating.
func Text(s string) string { return escape(s, true) }

// Line is [Text] for one line: newline and tab are escaped as well (\n,
// \t), so the result holds no control character at all.
func Line(s string) string { return escape(s, false) }

func escape(s string, keepLines bool) string {
	i := firstEscaped(s, keepLines)
	if i < 0 {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s) + 16)
	sb.WriteString(s[:i])
	appendEscaped(&sb, s[i:], keepLines)
	return sb.String()
}

// firstEscaped returns the offset of the first character of s that is
// escaped, or -1.
func firstEscaped(s string, keepLines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if !Shown(rune(c)) && !(keepLines && (c == '\n' || c == '\t')) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !Shown(r) {
			return i
		}
		i += n
	}
	return -1
}

const hexDigits = "0123456789abcdef"

func appendEscaped(sb *strings.Builder, s string, keepLines bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			writeHex(sb, 'x', uint32(s[i]), 2)
		case Shown(r):
			sb.WriteRune(r)
		case r == '\n' || r == '\t':
			if keepLines {
				sb.WriteRune(r)
			} else if r == '\n' {
				sb.WriteString(`\n`)
			} else {
				sb.WriteString(`\t`)
			}
		case r == '\r':
			sb.WriteString(`\r`)
		case r < utf8.RuneSelf:
			writeHex(sb, 'x', uint32(r), 2)
		case r <= 0xffff:
			writeHex(sb, 'u', uint32(r), 4)
		default:
			writeHex(sb, 'U', uint32(r), 8)
		}
		i += n
	}
}

func writeHex(sb *strings.Builder, kind byte, v uint32, digits int) {
	sb.WriteByte('\\')
	sb.WriteByte(kind)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		sb.WriteByte(hexDigits[v>>uint(shift)&0xf])
	}
}

// Cut returns s cut to at most n bytes at a rune boundary, with "…" after
// it when it was cut: for quoting a name or a value someone else sent,
// which may be a megabyte long, in a message or a record.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
