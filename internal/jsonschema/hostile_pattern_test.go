package jsonschema

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/internal/recost"
)

// allocated returns the bytes the runtime counted as allocated by f.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHostilePatternPrograms: a counted repetition makes a short pattern
// a large program. A server's schema could make Compile build hundreds of
// megabytes (one 3,310-byte pattern compiled to a program of about 300 MB;
// 1 MB of such patterns was allowed), keep them in the process-wide cache
// (any pattern of 256 bytes or less), and make one argument cost 10^9
// matcher steps charged as 10^6 (1 MB against the 12 bytes [a-z]{1000}!).
// Each control shows the cost without the defence, counted in bytes
// allocated or in the matcher's thread steps, never in time.
func TestHostilePatternPrograms(t *testing.T) {
	big := `(?:` + strings.Repeat("abcdefghij", 25) + `){1000}`
	t.Run("one large program", func(t *testing.T) {
		// Control: building the program the pattern asks for.
		if got := allocated(func() { regexp.MustCompile(big) }); got < 20<<20 {
			t.Fatalf("control: compiling %d bytes of pattern allocated %d bytes, want over 20 MB", len(big), got)
		}
		var err error
		got := allocated(func() { _, err = Compile([]byte(`{"pattern":` + quote(big) + `}`)) })
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "more than 16384 instructions") {
			t.Fatalf("got %v, want a SchemaError naming the instruction bound", err)
		}
		// Refused without being built, with StrictPatterns off too.
		if _, err := CompileWith([]byte(`{"pattern":`+quote(big)+`}`), Options{}); err == nil {
			t.Fatal("a schema whose pattern is too large compiled with StrictPatterns off: the pattern would be ignored")
		}
		if got > 1<<20 {
			t.Errorf("refusing the pattern allocated %d bytes", got)
		}
	})
	t.Run("many programs", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"allOf":[`)
		const n = 1100 // each ~1,000 instructions from 15 bytes: 1.1 M in all, 16 KB of text
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"pattern":"[a-z]{1000}%d"}`, i)
		}
		b.WriteString(`]}`)
		if got := allocated(func() { regexp.MustCompile(`[a-z]{1000}0`) }); got < 50_000 {
			t.Fatalf("control: one 14-byte pattern allocated %d bytes, want over 50 KB (%d of them: %d MB)", got, n, n*int(got)>>20)
		}
		var err error
		got := allocated(func() { _, err = Compile([]byte(b.String())) })
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "programs add up to more than") {
			t.Fatalf("got %v, want a SchemaError naming the bound on all programs", err)
		}
		if got > 120<<20 {
			t.Errorf("refusing the patterns allocated %d bytes", got)
		}
	})
	t.Run("cache keeps small programs only", func(t *testing.T) {
		p := `[b-y]{1000}#`
		if _, err := Compile([]byte(`{"pattern":` + quote(p) + `}`)); err != nil {
			t.Fatal(err)
		}
		if _, ok := regexpCache.Load(p); ok {
			t.Error("a 12-byte pattern of 1,000 instructions was kept in the process-wide cache")
		}
	})
	t.Run("matching is charged by program", func(t *testing.T) {
		p := `[a-z]{1000}!`
		s, err := Compile([]byte(`{"pattern":` + quote(p) + `}`))
		if err != nil {
			t.Fatal(err)
		}
		in := strings.Repeat("a", 8<<10)
		// Control: the work the matcher does, and the charge by pattern
		// length alone (what Validate charged).
		real := threadSteps(t, p, in)
		old := matchSteps + len(in)*(1+len(p)/matchPatternBytes)
		if real < 500*old {
			t.Fatalf("control: the matcher took %d steps, the old charge %d: want it 500 times more", real, old)
		}
		var re *pattern
		re, err = (&compiler{}).regexp(p, "")
		if err != nil {
			t.Fatal(err)
		}
		if charge := matchWork(re, len(in)); charge*matchInsts < real {
			t.Errorf("charged %d steps for %d of the matcher's, less than one per %d", charge, real, matchInsts)
		}
		// One megabyte: 10^9 steps of the matcher, refused before it runs.
		_, _, err = s.Validate([]byte(`"`+strings.Repeat("a", 1<<20-2)+`"`), Limits{})
		if !errors.Is(err, ErrTooComplex) {
			t.Errorf("got %v, want ErrTooComplex", err)
		}
	})
	t.Run("the external validator's estimate is by program", func(t *testing.T) {
		// unevaluatedProperties: the external validator matches, after an
		// estimate made before it starts; the estimate counted patterns.
		s, err := Compile([]byte(`{"properties":{"a":{"pattern":"[a-z]{1000}!"}},"unevaluatedProperties":false}`))
		if err != nil {
			t.Fatal(err)
		}
		if s.ext == nil {
			t.Fatal("the schema is not evaluated by the external validator")
		}
		in := `{"a":"` + strings.Repeat("a", 1<<20-10) + `"}`
		// Control: counted as one pattern it was within the budget, and
		// reading 1 MB costs the matcher 10^9 steps (about 1,000 a byte).
		if old := float64(len(in)) / 64; old > extBaseSteps {
			t.Fatalf("control: the old estimate %g is over the budget %d", old, extBaseSteps)
		}
		if real := threadSteps(t, `[a-z]{1000}!`, strings.Repeat("a", 4<<10)); real < 900*(4<<10) {
			t.Fatalf("control: %d steps over 4 KB", real)
		}
		if _, _, err := s.Validate([]byte(in), Limits{}); !errors.Is(err, ErrTooComplex) {
			t.Errorf("got %v, want ErrTooComplex before the external validator starts", err)
		}
	})
	t.Run("anchored patterns read a prefix", func(t *testing.T) {
		// A pattern anchored at the start with a longest match reads a
		// prefix only: a long string gets a violation, not a refusal.
		s, err := Compile([]byte(`{"pattern":"^[a-z0-9_-]{3,64}$"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, vs, err := s.Validate([]byte(`"`+strings.Repeat("a", 1<<20-2)+`"`), Limits{})
		if err != nil || len(vs) != 1 {
			t.Fatalf("got %v, %v; want one violation", vs, err)
		}
		in := strings.Repeat("a", 1<<16)
		re, _ := (&compiler{}).regexp(`^[a-z0-9_-]{3,64}$`, "")
		if charge, real := matchWork(re, len(in)), threadSteps(t, `^[a-z0-9_-]{3,64}$`, in); charge*matchInsts < real {
			t.Errorf("charged %d steps for %d of the matcher's", charge, real)
		}
	})
}

// threadSteps counts the matcher's steps searching s for p (see
// recost.PikeSteps).
func threadSteps(t *testing.T, p, s string) int {
	t.Helper()
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		t.Fatal(err)
	}
	return recost.PikeSteps(prog, s)
}
