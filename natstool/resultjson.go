package natstool

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/jsontext"
)

// Most results are text (output, error, is_error and kind) and, from typed
// tools, structured content: nothing else. encoding/json spends more time
// finding its way around the Result type by reflection than on those few
// bytes, in a round trip that costs tens of microseconds in all, so such
// results are encoded and decoded by hand here. Any other result, any
// string that would need escaping and any structured content that
// encoding/json would rewrite goes through encoding/json; the bytes are the
// same either way (see FuzzResultJSON).

// appendResult appends res as encoding/json writes it (with HTML
// escaping, as json.Marshal does), and reports false, having appended
// nothing, when res is not plain text that needs no escaping with, at
// most, structured content that encoding/json writes as it is.
func appendResult(b []byte, res *tool.Result) ([]byte, bool) {
	if len(res.Parts) > 0 || len(res.Metadata) > 0 ||
		!plain(res.Output) || !plain(res.Error) || !plain(string(res.Kind)) ||
		len(res.Structured) > 0 && !verbatim(res.Structured) {
		return b, false
	}
	b = append(b, `{"output":"`...)
	b = append(b, res.Output...)
	b = append(b, `","error":"`...)
	b = append(b, res.Error...)
	b = append(b, `","is_error":`...)
	if res.IsError {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	if res.Kind != "" {
		b = append(b, `,"kind":"`...)
		b = append(b, res.Kind...)
		b = append(b, '"')
	}
	if len(res.Structured) > 0 {
		b = append(b, `,"structured":`...)
		b = append(b, res.Structured...)
	}
	return append(b, '}'), true
}

// verbatim reports whether encoding/json writes v, a json.RawMessage, as
// it is: v is valid JSON, compact (no white space outside its strings),
// valid UTF-8, and holds none of the characters it escapes for HTML (<, >,
// &) and no U+2028 or U+2029. Its work is two passes over v.
func verbatim(v []byte) bool {
	inString := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '<' || c == '>' || c == '&':
			return false
		case inString && c == '\\':
			i++ // the escaped character, whatever it is
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		case c == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && (v[i+2] == 0xA8 || v[i+2] == 0xA9):
			return false
		}
	}
	return utf8.Valid(v) && json.Valid(v)
}

// plain reports whether s is valid UTF-8 that encoding/json writes as it
// is, between quotes: no control characters, no quote or backslash, none
// of the characters it escapes for HTML (<, >, &) and no U+2028 or
// U+2029.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size - 1
	}
	return true
}

// decodeResult decodes a result as json.Unmarshal does. The result of
// a plain reply stays off the heap: only encoding/json's needs one.
func decodeResult(data []byte) (tool.Result, error) {
	var res tool.Result
	if decodePlain(data, &res) {
		return res, nil
	}
	slow := new(tool.Result)
	err := json.Unmarshal(data, slow)
	return *slow, err
}

// decodePlain decodes data into res when it is an object whose members
// are only "output", "error" and "kind" with strings that hold no escape,
// "is_error" with true or false and "structured" with any valid JSON value,
// and reports whether it did. When it reports false, res may hold part of
// data.
func decodePlain(data []byte, res *tool.Result) bool {
	*res = tool.Result{}
	d := data
	d = skipSpace(d)
	if len(d) == 0 || d[0] != '{' {
		return false
	}
	d = skipSpace(d[1:])
	if len(d) > 0 && d[0] == '}' {
		return len(skipSpace(d[1:])) == 0
	}
	for {
		// The key stays bytes: only its value, when it is kept, is made a
		// string (one allocation per call saved on every result).
		key, rest, ok := plainBytes(d)
		if !ok {
			return false
		}
		d = skipSpace(rest)
		if len(d) == 0 || d[0] != ':' {
			return false
		}
		d = skipSpace(d[1:])
		switch string(key) {
		case "output", "error", "kind":
			var v []byte
			if v, d, ok = plainBytes(d); !ok {
				return false
			}
			switch string(key) {
			case "output":
				res.Output = string(v)
			case "error":
				res.Error = string(v)
			default:
				res.Kind = tool.ErrorKind(v)
			}
		case "is_error":
			switch {
			case bytes.HasPrefix(d, []byte("true")):
				res.IsError, d = true, d[4:]
			case bytes.HasPrefix(d, []byte("false")):
				res.IsError, d = false, d[5:]
			default:
				return false
			}
		case "structured":
			// The project's strict reader finds the value's end and checks
			// it in the same pass: what it accepts, encoding/json accepts
			// too (it is the stricter: invalid UTF-8, lone surrogates and
			// duplicate keys are errors), and what it refuses is left to
			// encoding/json. The depth limit is encoding/json's.
			n, err := jsontext.SkipValue(d, 0, 0, 10000)
			if err != nil {
				return false
			}
			// As json.RawMessage keeps it: the bytes as they are, copied.
			res.Structured, d = append(json.RawMessage(nil), d[:n]...), d[n:]
		default:
			return false // another member, or another case of one
		}
		d = skipSpace(d)
		if len(d) == 0 {
			return false
		}
		switch d[0] {
		case ',':
			d = skipSpace(d[1:])
		case '}':
			return len(skipSpace(d[1:])) == 0
		default:
			return false
		}
	}
}

// plainBytes reads a JSON string at the start of d that holds no
// escape, no control character and only valid UTF-8, and returns its
// bytes (a part of d) and what follows.
func plainBytes(d []byte) (s, rest []byte, ok bool) {
	if len(d) == 0 || d[0] != '"' {
		return nil, d, false
	}
	end := bytes.IndexByte(d[1:], '"')
	if end < 0 {
		return nil, d, false
	}
	v := d[1 : 1+end]
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return nil, d, false
		}
	}
	if !utf8.Valid(v) {
		return nil, d, false
	}
	return v, d[2+end:], true
}

// skipSpace skips JSON white space.
func skipSpace(d []byte) []byte {
	for len(d) > 0 && (d[0] == ' ' || d[0] == '\t' || d[0] == '\n' || d[0] == '\r') {
		d = d[1:]
	}
	return d
}
