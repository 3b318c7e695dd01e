package recost

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

var patterns = []string{
	`a`, `abc`, `(?i)abc`, `[a-z]`, `[a-z]{1000}x`, `(?:[a-z]{1000}){1}x`, `\w{10,1000}`, `a{2,}`, `a{0,5}`,
	`(?:` + strings.Repeat("abcdefghij", 25) + `){1000}`, `(a|bc|[d-f]+)*x?`, `^(?:a|b){3}$`, `(((a{10}){10}){10})`,
	`^[a-z0-9_-]{3,64}$`, `\A\d{4}-\d{2}-\d{2}\z`, `(?m)^abc`, `^a|^b`, `(^ab)c`, `^.*x`, `^(?i)k{3}`, `^é{2}`,
	`\bfoo\b`, `[^\x00-\x{10FFFF}]`, `^$`, `x{0}`, `(?s).{5}`, `^(?:a+|b)`,
}

// TestInstsBounds: the estimate is never below the size of the program
// Go builds, and not far above it.
func TestInstsBounds(t *testing.T) {
	for _, p := range patterns {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got, real := Insts(re, 1<<30), len(prog.Inst)
		if got < real || got > 4*real+8 {
			t.Errorf("%s: Insts = %d, program has %d instructions", p, got, real)
		}
		if lim := real / 2; Insts(re, lim) != lim+1 {
			t.Errorf("%s: Insts(limit %d) = %d, want %d", p, lim, Insts(re, lim), lim+1)
		}
	}
}

// TestSpan: an anchored pattern with a longest match never matches more
// than its span, and patterns that Go does not run anchored, or that have
// no longest match, have none.
func TestSpan(t *testing.T) {
	want := map[string]int{
		`^(?:a|b){3}$`: 12, `^[a-z0-9_-]{3,64}$`: 256, `\A\d{4}-\d{2}-\d{2}\z`: 34, `^$`: 0, `(^ab)c`: 3,
		`^(?i)k{3}`: 12, `^é{2}`: 4,
	}
	inputs := []string{"", "abc", "aaa", "kkk", "KKK", "\u212a\u212a\u212a", "éé", "2026-12-07", strings.Repeat("a", 70), "abcd"}
	for _, p := range patterns {
		re, _ := syntax.Parse(p, syntax.Perl)
		span, ok := Span(re, 1<<20)
		w, anchored := want[p]
		if ok != anchored || ok && span != w {
			t.Errorf("%s: Span = %d, %v; want %d, %v", p, span, ok, w, anchored)
		}
		if !ok {
			continue
		}
		rx := regexp.MustCompile(p)
		prog, _ := syntax.Compile(re.Simplify())
		if prog.StartCond()&syntax.EmptyBeginText == 0 {
			t.Errorf("%s: Span says anchored, Go's program does not start at the text's start", p)
		}
		for _, in := range inputs {
			if loc := rx.FindStringIndex(in); loc != nil && loc[1] > span {
				t.Errorf("%s matched %d bytes of %q, more than its span %d", p, loc[1], in, span)
			}
		}
	}
	if _, ok := Span(mustParse(t, `^a|^b`).Simplify(), 10); ok {
		t.Error("an alternation of anchored branches reported anchored")
	}
}

// TestInstsCountedRepetition is the attack the package exists for: a
// dozen bytes of pattern whose program has a thousand instructions.
func TestInstsCountedRepetition(t *testing.T) {
	re := mustParse(t, `(?:`+strings.Repeat("abcdefghij", 25)+`){1000}`)
	if n := Insts(re, 1<<14); n != 1<<14+1 {
		t.Errorf("Insts = %d, want the limit passed (%d)", n, 1<<14+1)
	}
}

func mustParse(t *testing.T, p string) *syntax.Regexp {
	t.Helper()
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// TestPikeSteps: the step counter sees what makes matching costly, the
// threads a counted repetition keeps alive, and the early end of an
// anchored search.
func TestPikeSteps(t *testing.T) {
	steps := func(p, s string) int {
		prog, err := syntax.Compile(mustParse(t, p).Simplify())
		if err != nil {
			t.Fatal(err)
		}
		return PikeSteps(prog, s)
	}
	in := strings.Repeat("a", 4000)
	if wide, narrow := steps(`[a-z]{1000}!`, in), steps(`[a-z]{10}!`, in); wide < 1000*len(in) || narrow > 50*len(in) {
		t.Errorf("steps: [a-z]{1000}! %d, [a-z]{10}! %d over %d bytes", wide, narrow, len(in))
	}
	if n := steps(`^[a-z]{3,64}$`, in); n > 20*64 {
		t.Errorf("an anchored search of a 64-byte pattern took %d steps over %d bytes", n, len(in))
	}
}
