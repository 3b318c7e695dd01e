package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
)

// allocated returns the bytes the heap allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// callTool runs the workspace tool name with ctx.
func callTool(t *testing.T, ts *Toolset, ctx context.Context, name string, args any) tool.Result {
	t.Helper()
	raw, _ := json.Marshal(args)
	for _, tl := range ts.Tools() {
		if tl.Name() == name {
			res, _ := tl.Execute(ctx, raw)
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}
}

// TestGlobLinksToDotBounded is issue 25's glob: links to "." make every
// wildcard element a way back to the top, and */*/*/*/* does work
// exponential in the number of links (five took 25 s and 2 GiB). The walk
// enters no link, so the pattern costs what the real tree costs. The
// bound is on bytes allocated, not time: main allocated 316 MiB for four
// links.
func TestGlobLinksToDotBounded(t *testing.T) {
	ws := t.TempDir()
	for i := range 5 {
		if err := os.Symlink(".", filepath.Join(ws, fmt.Sprintf("l%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(ws, "a", "b", "c", "d"), 0o755)
	os.WriteFile(filepath.Join(ws, "a", "b", "c", "d", "e"), nil, 0o644)
	for i := range 50 {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("file%02d", i)), nil, 0o644)
	}
	// Positive control: a walk that follows the links (the standard
	// library's Glob) multiplies its work by the links at every element:
	// three elements already match 1,406 paths (5 links × (5 links × 56
	// entries + a/b), and a/b/c) where the real tree has a/b/c alone.
	control, err := filepath.Glob(filepath.Join(ws, "*/*/*"))
	if err != nil || len(control) < 1000 {
		t.Fatalf("control: a glob that follows links matched %d paths (%v), want over 1,000", len(control), err)
	}
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	var res tool.Result
	n := allocated(func() { res = callTool(t, ts, context.Background(), "glob", GlobArgs{Pattern: "*/*/*/*/*"}) })
	if res.IsError || res.Output != "a/b/c/d/e" {
		t.Errorf("glob = %+v, want a/b/c/d/e alone", res)
	}
	if n > 8<<20 {
		t.Errorf("glob allocated %d MiB, want under 8", n>>20)
	}
	t.Logf("glob allocated %d KiB", n>>10)
}

// TestGlobStopsAtCap: a pattern matching more than MaxEntries paths
// stops walking once it has them, rather than walking everything and
// cutting afterwards: twice the matching tree costs about the same.
func TestGlobStopsAtCap(t *testing.T) {
	ws := t.TempDir()
	make := func(dir string, n int) {
		for i := range n {
			d := filepath.Join(ws, dir, fmt.Sprintf("d%05d", i))
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "f"), nil, 0o644)
		}
	}
	make("small", MaxEntries+10)
	make("large", 4*MaxEntries)
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	var small, large tool.Result
	a := allocated(func() { small = callTool(t, ts, context.Background(), "glob", GlobArgs{Pattern: "small/*/f"}) })
	b := allocated(func() { large = callTool(t, ts, context.Background(), "glob", GlobArgs{Pattern: "large/*/f"}) })
	for _, r := range []tool.Result{small, large} {
		if r.IsError || strings.Count(r.Output, "/f") != MaxEntries || !strings.Contains(r.Output, "[cut at 1000 paths]") {
			t.Errorf("glob = %d paths, %q", strings.Count(r.Output, "/f"), r.Error)
		}
	}
	// The large tree's directory is read whole (4000 names), its
	// subdirectories only until the cap: well under twice the small one.
	if b > 2*a {
		t.Errorf("glob of %d matches allocated %d KiB, of %d matches %d KiB: the walk went on past the cap", 4*MaxEntries, b>>10, MaxEntries+10, a>>10)
	}
	// Exactly: the walk looked at the large directory's entries and the
	// first MaxEntries subdirectories' one entry each.
	_, w, err := ts.globMatches(context.Background(), "large/*/f", MaxEntries+1)
	if err != nil || w.steps > 4*MaxEntries+MaxEntries+1 {
		t.Errorf("glob looked at %d entries (%v)", w.steps, err)
	}
}

// countdown is a context that ends after its Err has been asked n times:
// a deadline that passes while a walk runs, without a clock.
type countdown struct {
	context.Context
	left atomic.Int64
}

func (c *countdown) Err() error {
	if c.left.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *countdown) Done() <-chan struct{} {
	if c.left.Load() < 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return nil
}

func (c *countdown) Deadline() (time.Time, bool) { return time.Time{}, false }

// TestWalksHonourTheirContext: glob and grep stop when their context ends
// while they walk, and say so; main's glob never looked at it.
func TestWalksHonourTheirContext(t *testing.T) {
	ws := t.TempDir()
	for i := range 300 {
		d := filepath.Join(ws, fmt.Sprintf("d%03d", i))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "f"), []byte("needle\n"), 0o644)
	}
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	for _, c := range []struct {
		name string
		args any
	}{
		{"glob", GlobArgs{Pattern: "*/f"}},
		{"grep", GrepArgs{Pattern: "needle"}},
	} {
		ctx := &countdown{Context: context.Background()}
		ctx.left.Store(3)
		res := callTool(t, ts, ctx, c.name, c.args)
		if !res.IsError || !strings.Contains(res.Error, "stopped") || !strings.Contains(res.Error, "deadline exceeded") {
			t.Errorf("%s with a context that ends while it walks = %.200s / %q, want it stopped", c.name, res.Output, res.Error)
		}
	}
}

// TestWalkBoundsEntries: a tree larger than MaxWalkEntries entries stops
// the walk, which says so, rather than reading it all.
func TestWalkBoundsEntries(t *testing.T) {
	ts, err := New(sandbox.Policy{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	w := ts.newWalk(context.Background())
	w.steps = MaxWalkEntries - 2
	if !w.step() || !w.step() || w.step() {
		t.Errorf("step went on past MaxWalkEntries")
	}
	if !strings.Contains(w.note, "stopped after looking at 100000 entries") {
		t.Errorf("note %q", w.note)
	}
}

// TestGrepDoesNotEnterLinks: grep walks no link, to a directory inside the
// workspace or to one it already walked.
func TestGrepDoesNotEnterLinks(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "a"), 0o755)
	os.WriteFile(filepath.Join(ws, "a", "f"), []byte("needle\n"), 0o644)
	for i := range 5 {
		os.Symlink(".", filepath.Join(ws, fmt.Sprintf("l%d", i)))
	}
	os.Symlink("a", filepath.Join(ws, "la"))
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if res := callTool(t, ts, context.Background(), "grep", GrepArgs{Pattern: "needle"}); res.Output != "a/f:1:needle\n" {
		t.Errorf("grep = %+v", res)
	}
	// A link given as the path is resolved, as any path argument.
	if res := callTool(t, ts, context.Background(), "grep", GrepArgs{Pattern: "needle", Path: "la"}); res.Output != "a/f:1:needle\n" {
		t.Errorf("grep la = %+v", res)
	}
}

// TestCallsAfterCloseFail: once the Toolset is closed, no tool opens
// anything relative to the descriptor it held (whose number the process
// may have given to another file since).
func TestCallsAfterCloseFail(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a"), []byte("a"), 0o644)
	ts, err := New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	ts.Close()
	for name, args := range map[string]any{"read_file": ReadArgs{Path: "a"}, "list_dir": ListArgs{}, "grep": GrepArgs{Pattern: "a"}, "glob": GlobArgs{Pattern: "*"}, "write_file": WriteArgs{Path: "b", Content: "b"}} {
		if res := callTool(t, ts, context.Background(), name, args); !res.IsError {
			t.Errorf("%s after Close = %+v", name, res)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "b")); err == nil {
		t.Error("write_file wrote after Close")
	}
}
