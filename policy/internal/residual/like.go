package residual

import (
	"encoding/json"
	"strings"

	"github.com/cedar-policy/cedar-go"
)

// A likeMatcher is a Cedar like pattern compiled for the fast path. The
// shapes policies mostly use (an exact string, a prefix, a suffix, a
// substring, a prefix and a suffix) are matched with package strings;
// any other pattern is matched by cedar-go's Pattern.Match, as Cedar
// matches it. Both match bytes: a pattern's literals are the strings
// its source escapes give (\* a star, not a wildcard).
type likeMatcher struct {
	shape likeShape
	a, b  string        // the literals the shape names
	pat   cedar.Pattern // likeOther's pattern
}

type likeShape uint8

const (
	likeOther    likeShape = iota // pat.Match
	likeAny                       // *
	likeExact                     // a
	likePrefix                    // a*
	likeSuffix                    // *a
	likeContains                  // *a*
	likeAffix                     // a*b, a and b not overlapping
)

// compileLike compiles p. It reads p's components from its JSON form,
// the one cedar-go exports them through: a list of "Wildcard" and
// {"Literal": s}, with no two wildcards in a row.
func compileLike(p cedar.Pattern) likeMatcher {
	other := likeMatcher{pat: p}
	raw, err := p.MarshalJSON()
	if err != nil {
		return other
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return other
	}
	// shape is the pattern's components, W for a wildcard and L for a
	// literal; lits its literals in order.
	var shape []byte
	var lits []string
	for _, e := range elems {
		var w string
		if json.Unmarshal(e, &w) == nil {
			if w != "Wildcard" {
				return other
			}
			shape = append(shape, 'W')
			continue
		}
		var l struct{ Literal *string }
		if json.Unmarshal(e, &l) != nil || l.Literal == nil {
			return other
		}
		shape = append(shape, 'L')
		lits = append(lits, *l.Literal)
	}
	switch string(shape) {
	case "":
		return likeMatcher{shape: likeExact}
	case "W":
		return likeMatcher{shape: likeAny}
	case "L":
		return likeMatcher{shape: likeExact, a: lits[0]}
	case "LW":
		return likeMatcher{shape: likePrefix, a: lits[0]}
	case "WL":
		return likeMatcher{shape: likeSuffix, a: lits[0]}
	case "WLW":
		return likeMatcher{shape: likeContains, a: lits[0]}
	case "LWL":
		return likeMatcher{shape: likeAffix, a: lits[0], b: lits[1]}
	}
	return other
}

// match reports whether s matches the pattern, as Cedar's like does.
func (m *likeMatcher) match(s string) bool {
	switch m.shape {
	case likeAny:
		return true
	case likeExact:
		return s == m.a
	case likePrefix:
		return strings.HasPrefix(s, m.a)
	case likeSuffix:
		return strings.HasSuffix(s, m.a)
	case likeContains:
		return strings.Contains(s, m.a)
	case likeAffix:
		return len(s) >= len(m.a)+len(m.b) && strings.HasPrefix(s, m.a) && strings.HasSuffix(s, m.b)
	}
	return m.pat.Match(cedar.String(s))
}
