package residual

import (
	"fmt"

	"github.com/miniopenclaw/tool/internal/jsontext"
)

// A StrictError says why arguments a caller gave are not one strict JSON
// object; its message is for the model.
type StrictError struct{ Msg string }

func (e *StrictError) Error() string { return "its arguments are not one strict JSON object: " + e.Msg }

// Strict returns nil when args is one JSON object that every parser reads
// the same way (or only white space, read as the empty object), and a
// *StrictError saying why not otherwise: a value other than an object,
// text after it, a string that is not valid UTF-8
// or holds a lone surrogate escape (encoding/json reads either as
// U+FFFD, so two such strings look alike to the policies and the
// approval digest though a tool may read them apart), a number RFC 8259
// does not allow, nesting deeper than MaxDepth, or two keys of one object
// that are equal (parsers keep one or the other) or equal when case is
// ignored (encoding/json binds either to the same struct field). The
// registry checks arguments this way before its Authorizer sees them;
// this check is for arguments given to an Authorizer by another caller.
// Its work is linear in len(args).
func Strict(args []byte) error {
	i := jsontext.SkipSpace(args, 0)
	if i == len(args) {
		return nil // no arguments: the empty object, as ArgsRecord reads them
	}
	if args[i] != '{' {
		return &StrictError{"the arguments must be a JSON object"}
	}
	s := strictReader{b: args}
	next, err := s.value(i, 0)
	if err != nil {
		return err
	}
	if jsontext.SkipSpace(args, next) != len(args) {
		return &StrictError{fmt.Sprintf("there is more after the object, at offset %d", next)}
	}
	return nil
}

type strictReader struct {
	b    []byte
	fold []byte // scratch for folded keys
}

func syntax(err error) error { return &StrictError{err.Error()} }

func (s *strictReader) value(i, depth int) (int, error) {
	d := s.b
	i = jsontext.SkipSpace(d, i)
	if i >= len(d) {
		return i, syntax(jsontext.UnexpectedEnd(i))
	}
	switch c := d[i]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return i, &StrictError{fmt.Sprintf("%s (more than %d levels) at offset %d", jsontext.ErrDepth, MaxDepth, i)}
		}
		if c == '{' {
			return s.object(i, depth)
		}
		i = jsontext.SkipSpace(d, i+1)
		if i < len(d) && d[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = s.value(i, depth+1); err != nil {
				return i, err
			}
			i = jsontext.SkipSpace(d, i)
			switch {
			case i >= len(d):
				return i, syntax(jsontext.UnexpectedEnd(i))
			case d[i] == ']':
				return i + 1, nil
			case d[i] != ',':
				return i, syntax(jsontext.Unexpected(d, i, "',' or ']'"))
			}
			i++
		}
	case c == '"':
		_, next, err := jsontext.ReadString(d, i, nil)
		if err != nil {
			return next, s.stringError(err)
		}
		return next, nil
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	default:
		_, next, err := jsontext.ReadNumber(d, i)
		if err != nil {
			return next, syntax(err)
		}
		return next, nil
	}
}

func (s *strictReader) literal(i int, word string) (int, error) {
	next, err := jsontext.ReadLiteral(s.b, i, word)
	if err != nil {
		return next, syntax(err)
	}
	return next, nil
}

// stringError words a string's error so that the model can tell what to
// change.
func (s *strictReader) stringError(err error) error {
	return &StrictError{err.Error() + " (strings must be valid UTF-8, with no lone surrogate escapes)"}
}

// object reads the object at s.b[start]. Its keys are kept folded (see
// jsontext.FoldName), so that two that are equal, or equal but for case,
// are found in one lookup each.
func (s *strictReader) object(start, depth int) (int, error) {
	d := s.b
	i := jsontext.SkipSpace(d, start+1)
	if i < len(d) && d[i] == '}' {
		return i + 1, nil
	}
	var seen map[string][]byte // folded key to the key
	for {
		i = jsontext.SkipSpace(d, i)
		if i >= len(d) || d[i] != '"' {
			return i, syntax(jsontext.Unexpected(d, i, "a string key"))
		}
		keyAt := i
		key, next, err := jsontext.ReadString(d, i, nil)
		if err != nil {
			return next, s.stringError(err)
		}
		if seen == nil {
			seen = map[string][]byte{}
		}
		s.fold = jsontext.FoldName(s.fold[:0], key)
		if prev, ok := seen[string(s.fold)]; ok {
			if string(prev) == string(key) {
				return keyAt, &StrictError{fmt.Sprintf("duplicate key %q at offset %d; send each key once", jsontext.ShortKey(key), keyAt)}
			}
			return keyAt, &StrictError{fmt.Sprintf("keys %q and %q differ only in case (at offset %d), and some tools read them as one; send one of them", jsontext.ShortKey(prev), jsontext.ShortKey(key), keyAt)}
		}
		seen[string(s.fold)] = key
		i = jsontext.SkipSpace(d, next)
		if i >= len(d) || d[i] != ':' {
			return i, syntax(jsontext.Unexpected(d, i, "':'"))
		}
		if i, err = s.value(i+1, depth+1); err != nil {
			return i, err
		}
		i = jsontext.SkipSpace(d, i)
		switch {
		case i >= len(d):
			return i, syntax(jsontext.UnexpectedEnd(i))
		case d[i] == '}':
			return i + 1, nil
		case d[i] != ',':
			return i, syntax(jsontext.Unexpected(d, i, "',' or '}'"))
		}
		i++
	}
}
