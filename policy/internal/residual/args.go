package residual

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/cedar-policy/cedar-go"
)

var errBadArgs = errors.New("malformed arguments")

// ArgsRecord converts checked arguments, a JSON object the registry has
// already parsed strictly, to a Cedar record in one pass, by the rules of
// cedarValue. Nesting deeper than MaxDepth is refused.
// The values of path arguments, and the strings of lists in them, are
// cleaned (see CleanPath).
func ArgsRecord(args []byte, paths map[string]bool) (cedar.Record, error) {
	p := argParser{b: args, paths: paths}
	p.space()
	if p.i == len(p.b) {
		return cedar.NewRecord(nil), nil
	}
	v, ok, err := p.value(0, false)
	if err != nil {
		return cedar.Record{}, err
	}
	rec, isRec := v.(cedar.Record)
	if !ok || !isRec {
		return cedar.Record{}, errBadArgs
	}
	return rec, nil
}

// ContextArgs returns the record context.args holds for a call whose
// checked arguments are args (a JSON object), for policies that read use
// of them: the arguments use names, or all of them when it reads all,
// with the values of the arguments named in paths cleaned ([CleanPath]).
func ContextArgs(args []byte, use Use, paths map[string]bool) (cedar.Record, error) {
	if !use.All {
		bp := selectBuffers.Get().(*[]byte)
		defer selectBuffers.Put(bp)
		var err error
		if args, err = selectArgs(args, use.Args, bp); err != nil {
			return cedar.Record{}, err
		}
	}
	return ArgsRecord(args, paths)
}

type argParser struct {
	b     []byte
	i     int
	paths map[string]bool // keys whose string values are paths to clean
	odd   bool            // a number that may not be a whole Long, or a null in an array, was scanned
}

func (p *argParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// value parses one JSON value; ok is false for null and for numbers
// that are not whole numbers in 64 bits, which are left out. isPath says
// the value is that of a path argument, or a list (at any depth) in one:
// its strings are paths, cleaned (see CleanPath).
func (p *argParser) value(depth int, isPath bool) (v cedar.Value, ok bool, err error) {
	if depth > MaxDepth {
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
			v, ok, err := p.value(depth+1, p.paths[k])
			if err != nil {
				return nil, false, err
			}
			if ok {
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
			v, ok, err := p.value(depth+1, isPath)
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
		if isPath {
			if s, err = CleanPath(s); err != nil {
				return nil, false, err
			}
		}
		return cedar.String(s), true, nil
	case c == 't' && p.lit("true"):
		return cedar.True, true, nil
	case c == 'f' && p.lit("false"):
		return cedar.False, true, nil
	case c == 'n' && p.lit("null"):
		return nil, false, nil
	case c == '-' || c >= '0' && c <= '9':
		lit, err := p.number()
		if err != nil {
			return nil, false, err
		}
		if n, whole, _ := wholeNumber(lit); whole {
			return cedar.Long(n), true, nil
		}
		// Left out: a call whose policies read it has been refused
		// before (see FirstInexact); no policy reads this one.
		return nil, false, nil
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
	raw, escaped, err := p.rawStr()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errBadArgs
	}
	return s, nil
}

// CleanPath returns the path p names, lexically: "." and ".." resolved,
// repeated and trailing slashes merged. A relative path that climbs out
// of its root keeps its leading "../", so a condition such as
// like "docs/*" cannot be dodged with "docs/../secrets/k", and one on
// "../*" can refuse escapes. What cannot be read one way only is refused
// rather than guessed: a backslash (a separator to some tools, a byte of
// a name to others), a NUL byte (where C-based tools end the name) and
// bytes that are not UTF-8.
func CleanPath(p string) (string, error) {
	if p == "" {
		return p, nil
	}
	switch {
	case strings.IndexByte(p, '\\') >= 0:
		return "", &PathError{p, `contains a backslash, which some tools read as a separator and others as part of a name; use "/" between directories`}
	case strings.IndexByte(p, 0) >= 0:
		return "", &PathError{p, "contains a NUL byte"}
	case !utf8.ValidString(p):
		return "", &PathError{p, "is not valid UTF-8"}
	}
	return path.Clean(p), nil
}

// A PathError refuses a path argument; its message is for the model.
type PathError struct {
	Path, Why string
}

func (e *PathError) Error() string { return fmt.Sprintf("path %q %s", e.Path, e.Why) }
