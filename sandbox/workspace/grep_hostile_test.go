package workspace

import (
	"context"
	"os"
	"path/filepath"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/internal/recost"
	"github.com/miniopenclaw/tool/sandbox"
)

// TestGrepPatternWorkBounded: grep compiled the model's pattern with no
// bound on its program and matched it against up to 64 MB with no bound
// on the work: within 1,024 bytes, \pL{999} repeated is a program of
// hundreds of thousands of instructions, and [a-z]{300}[0-9] (900) over
// 8 MB of letters is billions of matcher steps, minutes of CPU that go
// on after the call's time limit (the matcher does not read the
// context). A pattern whose program would pass 16,384 instructions is now
// refused before it is built, and the matching is charged as a schema's
// pattern is (a step a byte, one more for each 8 instructions), the
// search stopping with a note past 2^25 steps. Controls count matcher
// steps, never time; a cheap pattern still reads the whole 8 MB.
func TestGrepPatternWorkBounded(t *testing.T) {
	ws := t.TempDir()
	line := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 64<<10/26) + "\n"
	body := strings.Repeat(line, 8<<20/len(line)) + "needle 7\n"
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()

	huge := strings.Repeat(`\pL{999}`, 100)
	parsed, err := syntax.Parse(huge, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	if n := recost.Insts(parsed, 1<<20); len(huge) > 1024 || n < 100_000 {
		t.Fatalf("control: %d bytes, a program of %d instructions", len(huge), n)
	}
	res := callTool(t, ts, context.Background(), "grep", GrepArgs{Pattern: huge})
	if !res.IsError || !strings.Contains(res.Error, "16384 instructions") {
		t.Errorf("grep with a huge program = %.300s, want it refused naming the bound", res.Text())
	}

	const slow = `[a-z]{300}[0-9]`
	parsed, err = syntax.Parse(slow, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		t.Fatal(err)
	}
	if steps := recost.PikeSteps(prog, line[:8<<10]) * (len(body) / (8 << 10)); steps < 4<<30 {
		t.Fatalf("control: %s over the file takes %d matcher steps, want over 2^32", slow, steps)
	}
	res = callTool(t, ts, context.Background(), "grep", GrepArgs{Pattern: slow})
	if res.IsError || !strings.Contains(res.Output, "work limit") {
		t.Errorf("grep %s = %.300s, want the search stopped at the work limit, saying so", slow, res.Text())
	}
	res = callTool(t, ts, context.Background(), "grep", GrepArgs{Pattern: `needle [0-9]`})
	if res.IsError || !strings.Contains(res.Output, "big.txt:") || strings.Contains(res.Output, "stopped") {
		t.Errorf("control: a cheap pattern over the whole file = %.300s", res.Text())
	}
}
