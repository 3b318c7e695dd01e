package policy

import (
	"encoding/json"
	"errors"
	"path"
	"strings"

	"github.com/cedar-policy/cedar-go"
)

var errBadArgs = errors.New("malformed arguments")

// argsRecord converts checked arguments, a JSON object the registry has
// already parsed strictly, to a Cedar record in one pass, by the rules of
// cedarValue. Nesting deeper than maxValueDepth is refused.
func argsRecord(args []byte, paths map[string]bool) (cedar.Record, error) {
	p := argParser{b: args, paths: paths}
	p.space()
	if p.i == len(p.b) {
		return cedar.NewRecord(nil), nil
	}
	v, ok, err := p.value(0)
	if err != nil {
		return cedar.Record{}, err
	}
	rec, isRec := v.(cedar.Record)
	if !ok || !isRec {
		return cedar.Record{}, errBadArgs
	}
	return rec, nil
}

type argParser struct {
	b     []byte
	i     int
	paths map[string]bool // keys whose string values are paths to clean
}

func (p *argParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// value parses one JSON value; ok is false for null and for numbers
// Cedar cannot hold, which are left out.
func (p *argParser) value(depth int) (v cedar.Value, ok bool, err error) {
	if depth > maxValueDepth {
		return nil, false, errBadArgs
	}
	p.space()
	if p.i >= len(p.b) {
		return nil, false, errBadArgs
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := cedar.RecordMap{}
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return cedar.NewRecord(m), true, nil
		}
		for {
			p.space()
			k, err := p.str()
			if err != nil {
				return nil, false, err
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false, errBadArgs
			}
			p.i++
			v, ok, err := p.value(depth + 1)
			if err != nil {
				return nil, false, err
			}
			if ok {
				if str, isStr := v.(cedar.String); isStr && p.paths[k] {
					v = cedar.String(cleanPath(string(str)))
				}
				m[cedar.String(k)] = v
			}
			p.space()
			if p.i >= len(p.b) {
				return nil, false, errBadArgs
			}
			if p.b[p.i] == '}' {
				p.i++
				return cedar.NewRecord(m), true, nil
			}
			if p.b[p.i] != ',' {
				return nil, false, errBadArgs
			}
			p.i++
		}
	case c == '[':
		p.i++
		var vals []cedar.Value
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return cedar.NewSet(), true, nil
		}
		for {
			v, ok, err := p.value(depth + 1)
			if err != nil {
				return nil, false, err
			}
			if ok {
				vals = append(vals, v)
			}
			p.space()
			if p.i >= len(p.b) {
				return nil, false, errBadArgs
			}
			if p.b[p.i] == ']' {
				p.i++
				return cedar.NewSet(vals...), true, nil
			}
			if p.b[p.i] != ',' {
				return nil, false, errBadArgs
			}
			p.i++
		}
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, false, err
		}
		return cedar.String(s), true, nil
	case c == 't' && p.lit("true"):
		return cedar.True, true, nil
	case c == 'f' && p.lit("false"):
		return cedar.False, true, nil
	case c == 'n' && p.lit("null"):
		return nil, false, nil
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.b) && (p.b[p.i] == '-' || p.b[p.i] == '+' || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E' || p.b[p.i] >= '0' && p.b[p.i] <= '9') {
			p.i++
		}
		v, ok := numberValue(string(p.b[start:p.i]))
		return v, ok, nil
	}
	return nil, false, errBadArgs
}

func (p *argParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// str parses a JSON string; escapes are decoded by encoding/json.
func (p *argParser) str() (string, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", errBadArgs
	}
	start := p.i
	escaped := false
	for p.i++; p.i < len(p.b); p.i++ {
		switch p.b[p.i] {
		case '\\':
			escaped = true
			p.i++
		case '"':
			p.i++
			if !escaped {
				return string(p.b[start+1 : p.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
				return "", errBadArgs
			}
			return s, nil
		}
	}
	return "", errBadArgs
}

// cleanPath returns the path a file tool resolves p to, lexically:
// backslashes read as slashes, "." and ".." resolved, repeated slashes
// merged. A relative path that climbs out of its root keeps its leading
// "../", so a condition such as like "docs/*" cannot be dodged with
// "docs/../secrets/k", and one on "../*" can refuse escapes.
func cleanPath(p string) string {
	if p == "" {
		return p
	}
	return path.Clean(strings.ReplaceAll(p, "\\", "/"))
}
