// Package jsontext holds the strict JSON lexer shared by the typed argument
// decoder and the generic value parser.
//
// It is strict where encoding/json is lenient: strings must be valid UTF-8
// with no lone surrogate escapes, and numbers must follow RFC 8259 exactly.
// Every function reports errors as a *SyntaxError with the byte offset.
package jsontext

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A SyntaxError reports malformed JSON at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset)
}

func errAt(i int, format string, args ...any) error {
	return &SyntaxError{Offset: i, Msg: fmt.Sprintf(format, args...)}
}

// UnexpectedEnd returns the error for input that ends at offset i.
func UnexpectedEnd(i int) error { return errAt(i, "unexpected end of input") }

// Unexpected returns the error for a byte at i that cannot start what was
// wanted (for example "a value" or "',' or '}'").
func Unexpected(data []byte, i int, want string) error {
	if i >= len(data) {
		return UnexpectedEnd(i)
	}
	c := data[i]
	if c >= 0x20 && c < 0x7f {
		return errAt(i, "invalid character %q, expected %s", c, want)
	}
	return errAt(i, "invalid byte 0x%02x, expected %s", c, want)
}

// SkipSpace returns the index of the first non-whitespace byte at or after i.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// KindName names the kind of JSON value that starts with c, for messages.
func KindName(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return "number"
		}
		return "invalid value"
	}
}

// ReadString reads the JSON string whose opening quote is at data[i]. It
// returns the decoded contents and the index just past the closing quote.
// When the string has no escapes the result aliases data; otherwise it is
// appended to buf[:0] and aliases buf. Invalid UTF-8, control characters,
// bad escapes and lone surrogates are errors.
func ReadString(data []byte, i int, buf []byte) (s []byte, next int, err error) {
	start := i + 1
	j := start
	// Fast path: printable ASCII with no escapes.
	for j < len(data) {
		c := data[j]
		if c == '"' {
			return data[start:j], j + 1, nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
		j++
	}
	if j >= len(data) {
		return nil, j, errAt(len(data), "unexpected end of input inside a string")
	}
	out := append(buf[:0], data[start:j]...)
	escaped := false
	for j < len(data) {
		c := data[j]
		switch {
		case c == '"':
			if !escaped {
				return data[start:j], j + 1, nil
			}
			return out, j + 1, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(data) {
				return nil, j, errAt(len(data), "unexpected end of input inside a string")
			}
			switch e := data[j+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				j += 2
			case 'b':
				out = append(out, '\b')
				j += 2
			case 'f':
				out = append(out, '\f')
				j += 2
			case 'n':
				out = append(out, '\n')
				j += 2
			case 'r':
				out = append(out, '\r')
				j += 2
			case 't':
				out = append(out, '\t')
				j += 2
			case 'u':
				r, ok := hex4(data, j+2)
				if !ok {
					return nil, j, errAt(j, "invalid \\u escape in string")
				}
				j += 6
				if utf16.IsSurrogate(r) {
					if r >= 0xdc00 {
						return nil, j - 6, errAt(j-6, "lone surrogate \\u%04x in string", r)
					}
					if j+1 >= len(data) || data[j] != '\\' || data[j+1] != 'u' {
						return nil, j - 6, errAt(j-6, "lone surrogate \\u%04x in string", r)
					}
					r2, ok := hex4(data, j+2)
					if !ok {
						return nil, j, errAt(j, "invalid \\u escape in string")
					}
					if r2 < 0xdc00 || r2 > 0xdfff {
						return nil, j - 6, errAt(j-6, "lone surrogate \\u%04x in string", r)
					}
					r = utf16.DecodeRune(r, r2)
					j += 6
				}
				out = utf8.AppendRune(out, r)
			default:
				return nil, j, errAt(j, "invalid escape \\%c in string", e)
			}
		case c < 0x20:
			return nil, j, errAt(j, "control character 0x%02x in string (escape it)", c)
		case c < 0x80:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size <= 1 {
				return nil, j, errAt(j, "invalid UTF-8 in string")
			}
			out = append(out, data[j:j+size]...)
			j += size
		}
	}
	return nil, j, errAt(len(data), "unexpected end of input inside a string")
}

func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// ReadNumber reads the JSON number starting at data[i] and returns its
// literal text and the index just past it. The grammar is RFC 8259's:
// no leading zeros, no '+', no NaN or Infinity.
func ReadNumber(data []byte, i int) (lit []byte, next int, err error) {
	start := i
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i >= len(data) {
		return nil, i, UnexpectedEnd(i)
	}
	switch c := data[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i++
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		return nil, i, Unexpected(data, i, "a digit")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return nil, i, Unexpected(data, i, "a digit after the decimal point")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return nil, i, Unexpected(data, i, "a digit in the exponent")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	return data[start:i], i, nil
}

// IsInteger reports whether a number literal read by ReadNumber denotes an
// integer value, such as 3, -0, 3.0 or 1e2 (JSON Schema's "integer").
func IsInteger(lit []byte) bool {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil { // out of float64 range: decide from the text
		for _, c := range lit {
			if c == '.' || c == 'e' || c == 'E' {
				return false
			}
		}
		return true
	}
	return f == math.Trunc(f)
}

// ReadLiteral reads one of true, false or null at data[i] and returns the
// index just past it.
func ReadLiteral(data []byte, i int, word string) (next int, err error) {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		if len(data)-i < len(word) && string(data[i:]) == word[:len(data)-i] {
			return i, UnexpectedEnd(len(data))
		}
		return i, Unexpected(data, i, "a value")
	}
	return i + len(word), nil
}

// ErrDepth is the message of the error for input nested deeper than allowed.
const ErrDepth = "nested too deeply"

// SkipValue reads and discards the value at data[i] (after any whitespace),
// checking it as strictly as the other functions, including duplicate keys
// in objects. depth is the nesting depth of the value; values nested deeper
// than maxDepth are an error.
func SkipValue(data []byte, i, depth, maxDepth int) (next int, err error) {
	i = SkipSpace(data, i)
	if i >= len(data) {
		return i, UnexpectedEnd(i)
	}
	switch c := data[i]; c {
	case '"':
		_, i, err = ReadString(data, i, nil)
		return i, err
	case 't':
		return ReadLiteral(data, i, "true")
	case 'f':
		return ReadLiteral(data, i, "false")
	case 'n':
		return ReadLiteral(data, i, "null")
	case '[':
		if depth >= maxDepth {
			return i, errAt(i, "%s (more than %d levels)", ErrDepth, maxDepth)
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, nil
		}
		for {
			if i, err = SkipValue(data, i, depth+1, maxDepth); err != nil {
				return i, err
			}
			i = SkipSpace(data, i)
			if i >= len(data) {
				return i, UnexpectedEnd(i)
			}
			if data[i] == ']' {
				return i + 1, nil
			}
			if data[i] != ',' {
				return i, Unexpected(data, i, "',' or ']'")
			}
			i++
		}
	case '{':
		if depth >= maxDepth {
			return i, errAt(i, "%s (more than %d levels)", ErrDepth, maxDepth)
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, nil
		}
		// The keys seen so far: the first few in an array on the stack,
		// compared one by one, and only a larger object's in a map, so
		// that skipping the small objects of a usual request allocates
		// nothing.
		var firstArray [8][]byte
		first := firstArray[:0]
		var seen map[string]struct{}
		var buf []byte
		for {
			i = SkipSpace(data, i)
			if i >= len(data) {
				return i, UnexpectedEnd(i)
			}
			if data[i] != '"' {
				return i, Unexpected(data, i, "a string key")
			}
			keyAt := i
			var key []byte
			if key, i, err = ReadString(data, i, buf); err != nil {
				return i, err
			}
			dup := false
			for _, k := range first {
				dup = dup || string(k) == string(key)
			}
			if _, inMap := seen[string(key)]; dup || inMap {
				return keyAt, errAt(keyAt, "duplicate key %q", ShortKey(key))
			}
			switch {
			case len(first) < cap(first):
				// key stays valid: it is a part of data or, escaped,
				// a copy of its own (buf is nil).
				first = append(first, key)
			case seen == nil:
				seen = make(map[string]struct{}, 2*len(first))
				for _, k := range first {
					seen[string(k)] = struct{}{}
				}
				fallthrough
			default:
				seen[string(key)] = struct{}{}
			}
			i = SkipSpace(data, i)
			if i >= len(data) {
				return i, UnexpectedEnd(i)
			}
			if data[i] != ':' {
				return i, Unexpected(data, i, "':'")
			}
			if i, err = SkipValue(data, i+1, depth+1, maxDepth); err != nil {
				return i, err
			}
			i = SkipSpace(data, i)
			if i >= len(data) {
				return i, UnexpectedEnd(i)
			}
			if data[i] == '}' {
				return i + 1, nil
			}
			if data[i] != ',' {
				return i, Unexpected(data, i, "',' or '}'")
			}
			i++
		}
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			_, i, err = ReadNumber(data, i)
			return i, err
		}
		return i, Unexpected(data, i, "a value")
	}
}
