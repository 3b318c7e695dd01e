package toolsearch

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/echotool"
	"github.com/miniopenclaw/tool/internal/recost"
)

// TestSearchRegexpProgramBounded: a model's regular expression within
// MaxPatternBytes could still compile to a program of 27 MB, or cost a
// thousand matcher steps for every byte of every tool's text, because a
// counted repetition repeats what it applies to. Both are refused before
// the program is built. The controls count bytes allocated and the
// matcher's steps, never time.
func TestSearchRegexpProgramBounded(t *testing.T) {
	ix := New(testRegistry(t, sample...))
	defer ix.Close()
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	big := `(?:` + strings.Repeat("abcdefghij", 24) + `){1000}`
	wide := `[a-z]{1000}[!?]`
	if len(big) > MaxPatternBytes {
		t.Fatalf("the attack is %d bytes, over MaxPatternBytes", len(big))
	}
	// Controls: what the patterns cost without the bound.
	if got := allocated(func() { regexp.MustCompile(big) }); got < 20<<20 {
		t.Fatalf("control: compiling %d bytes allocated %d bytes, want over 20 MB", len(big), got)
	}
	text := strings.Repeat("a", 8<<10) // the text of one tool, as indexed at most
	parsed, err := syntax.Parse(wide, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		t.Fatal(err)
	}
	if steps := recost.PikeSteps(prog, text); steps < 500*len(text) {
		t.Fatalf("control: %s took %d steps over %d bytes, want 500 a byte", wide, steps, len(text))
	}
	for _, p := range []string{big, wide, `(?i)(?:slack|github){200}`} {
		var err error
		got := allocated(func() { _, err = ix.SearchRegexp(p, 5) })
		var pe *PatternError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, "instructions") {
			t.Errorf("SearchRegexp(%.30q): %v, want a PatternError naming the instruction bound", p, err)
		}
		if got > 1<<20 {
			t.Errorf("SearchRegexp(%.30q) allocated %d bytes refusing it", p, got)
		}
	}
	// Counted repetitions that stay small still work.
	if got, err := ix.SearchRegexp(`^[a-z]{3,20}_`, 10); err != nil || len(got) == 0 {
		t.Errorf("SearchRegexp(^[a-z]{3,20}_) = %v, %v", got, err)
	}
}

// TestSearchRegexpWorkBounded: within MaxPatternInsts, a model's regular
// expression still cost its program's size in matcher steps for every
// byte of every tool's text, with no bound on the total: [a-z ]{300}[0-9]
// over 1,000 tools of 8 KB took a minute of CPU per tool_search call,
// holding the index's read lock. The work is charged as it goes and the
// search fails with a PatternError past MaxPatternWork. The control
// counts the matcher's steps over the same text, never time; cheap
// patterns over the same index still answer.
func TestSearchRegexpWorkBounded(t *testing.T) {
	desc := strings.Repeat("lorem ipsum dolor sit amet ", 8<<10/27)
	var tools []tool.Tool
	for i := range 400 {
		tools = append(tools, echotool.New(fmt.Sprintf("tool_%d", i), desc, `{"type":"object"}`))
	}
	ix := New(testRegistry(t, tools...))
	defer ix.Close()
	const attack = `[a-z ]{250}[0-9]`
	parsed, err := syntax.Parse(attack, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	if n := recost.Insts(parsed, MaxPatternInsts); n > MaxPatternInsts {
		t.Fatalf("the attack's program (%d instructions) is over MaxPatternInsts", n)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		t.Fatal(err)
	}
	if steps := recost.PikeSteps(prog, desc) * len(tools); steps < 20*MaxPatternWork {
		t.Fatalf("control: the attack takes %d matcher steps over the index, want over %d", steps, 20*MaxPatternWork)
	}
	_, err = ix.SearchRegexp(attack, 5)
	var pe *PatternError
	if !errors.As(err, &pe) || !strings.Contains(pe.Reason, "steps") {
		t.Fatalf("SearchRegexp(%s) = %v, want a PatternError naming the work bound", attack, err)
	}
	for _, p := range []string{`lorem`, `(?i)DOLOR\s+sit`, `^tool_1[0-9]*$`, `sit amet`} {
		if got, err := ix.SearchRegexp(p, 5); err != nil || len(got) == 0 {
			t.Errorf("SearchRegexp(%s) = %d matches, %v; want matches", p, len(got), err)
		}
	}
}
