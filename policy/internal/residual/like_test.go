package residual

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/x/exp/ast"
)

// likeStrings are the strings the like tests match: empty, the
// patterns' literals, overlapping and repeated ones, a literal star and
// backslash, and multi-byte text.
var likeStrings = []string{"", "a", "b", "ab", "ba", "aab", "abab", "a*b", "*", "**", `\`, `a\b`, "docs/", "docs/a",
	"docs/../k", "../", "x/../y", "..", "/..", "readme.md", ".md", "md", "é", "aéb", "aé", "éb", "secret", "my-secret-x"}

// likeOfSource compiles the like pattern of the Cedar source literal pat
// as the fast path does: from a policy that tests it, whose residual for
// any principal and tool is its condition.
func likeOfSource(t *testing.T, pat string) likeMatcher {
	t.Helper()
	list, err := cedar.NewPolicyListFromBytes("p.cedar", []byte(fmt.Sprintf(`@id("p") permit (principal, action, resource) when { context.args.s like %s };`, pat)))
	if err != nil || len(list) != 1 {
		t.Fatalf("%s: %v", pat, err)
	}
	res := (*ast.Policy)(list[0].AST())
	p := Compile([]Rule{{Residual: res, ID: "p"}}, UseOf(res))
	if p == nil || len(p.rules) != 1 || len(p.rules[0].conds) != 1 || p.rules[0].conds[0].body.op != opLike {
		t.Fatalf("%s: no fast program with one like", pat)
	}
	return p.rules[0].conds[0].body.like
}

// cedarLike reports whether Cedar, evaluating the source literal pat
// with like, matches s.
func cedarLike(t *testing.T, pat, s string) bool {
	t.Helper()
	ps, err := cedar.NewPolicySetFromBytes("like.cedar", []byte(fmt.Sprintf(`permit (principal, action, resource) when { context.s like %s };`, pat)))
	if err != nil {
		t.Fatalf("%s: %v", pat, err)
	}
	dec, diag := cedar.Authorize(ps, cedar.EntityMap{}, cedar.Request{Context: cedar.NewRecord(cedar.RecordMap{"s": cedar.String(s)})})
	if len(diag.Errors) > 0 {
		t.Fatalf("%s on %q: %v", pat, s, diag.Errors)
	}
	return dec == cedar.Allow
}

// TestLikeMatchesCedar checks, for patterns written in Cedar source
// (escapes among them), that the compiled matcher takes the shape
// expected of it and matches exactly the strings Cedar's like matches.
func TestLikeMatchesCedar(t *testing.T) {
	for _, tc := range []struct {
		pat   string // a Cedar string literal
		shape likeShape
	}{
		{`""`, likeExact},
		{`"a"`, likeExact},
		{`"a\*b"`, likeExact}, // an escaped star is a literal star
		{`"\\"`, likeExact},
		{`"*"`, likeAny},
		{`"**"`, likeAny},
		{`"docs/*"`, likePrefix},
		{`"\**"`, likePrefix},
		{`"a\\*"`, likePrefix},
		{`"*.md"`, likeSuffix},
		{`"*\*"`, likeSuffix},
		{`"*../*"`, likeContains},
		{`"*secret*"`, likeContains},
		{`"**ab**"`, likeContains},
		{`"*\**"`, likeContains},
		{`"*\u{e9}*"`, likeContains},
		{`"a*b"`, likeAffix},
		{`"ab*ab"`, likeAffix}, // "ab" must not match: the two do not overlap
		{`"a*\*"`, likeAffix},
		{`"\u{e9}*b"`, likeAffix},
		{`"a*b*"`, likeOther},
		{`"*a*b"`, likeOther},
		{`"*a*b*"`, likeOther},
		{`"a*b*a"`, likeOther},
	} {
		m := likeOfSource(t, tc.pat)
		if m.shape != tc.shape {
			t.Errorf("%s: shape %d, want %d", tc.pat, m.shape, tc.shape)
		}
		for _, s := range likeStrings {
			if got, want := m.match(s), cedarLike(t, tc.pat, s); got != want {
				t.Errorf("%s on %q: %v, Cedar %v", tc.pat, s, got, want)
			}
		}
	}
}

// patternOf makes a cedar.Pattern of a pattern in a small syntax: * is a
// wildcard, \ makes the next byte literal, any other byte is literal.
func patternOf(spec string) cedar.Pattern {
	var comps []any
	for i := 0; i < len(spec); i++ {
		switch c := spec[i]; {
		case c == '*':
			comps = append(comps, cedar.Wildcard{})
		case c == '\\' && i+1 < len(spec):
			i++
			comps = append(comps, spec[i:i+1])
		default:
			comps = append(comps, spec[i:i+1])
		}
	}
	return cedar.NewPattern(comps...)
}

// checkLike checks that the compiled pattern of spec matches s exactly
// when cedar-go's Pattern.Match does, and returns the pattern's shape.
func checkLike(t *testing.T, spec, s string) likeShape {
	p := patternOf(spec)
	m := compileLike(p)
	if got, want := m.match(s), p.Match(cedar.String(s)); got != want {
		t.Fatalf("pattern %q on %q: %v, cedar-go %v", spec, s, got, want)
	}
	return m.shape
}

// TestLikeRandom matches random patterns over a small alphabet against
// random strings over it, and checks that every shape was met.
func TestLikeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, n int) string {
		var b strings.Builder
		for range rng.IntN(n + 1) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	seen := map[likeShape]int{}
	for range 20000 {
		spec, s := word(`ab*\`, 6), word("ab*", 7)
		seen[checkLike(t, spec, s)]++
	}
	for sh := likeOther; sh <= likeAffix; sh++ {
		if seen[sh] == 0 {
			t.Errorf("no pattern of shape %d", sh)
		}
	}
}

// FuzzLike is TestLikeRandom's check on the fuzzer's pattern and string.
func FuzzLike(f *testing.F) {
	for _, c := range [][2]string{{"*../*", "x/../y"}, {"ab*ab", "ab"}, {`a\**`, "a*b"}, {"*a*b", "bab"}, {"\xff*", "\xff"}, {"", ""}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, spec, s string) { checkLike(t, spec, s) })
}
