package container

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
)

// nodeModulesWorkspace makes a workspace like one holding node_modules:
// pkgs packages of a package.json and files-1 sources under lib/, with one
// nested repository (vendor/lib) and the workspace's own .git, owned by
// the sandbox user.
func nodeModulesWorkspace(tb testing.TB, ws string, pkgs, files int) {
	tb.Helper()
	for i := range pkgs {
		dir := filepath.Join(ws, "node_modules", fmt.Sprintf("@s%d", i%50), fmt.Sprintf("p%d", i), "lib")
		must(tb, os.MkdirAll(dir, 0o755))
		must(tb, os.WriteFile(filepath.Join(dir, "..", "package.json"), []byte("{}"), 0o644))
		for j := range files - 1 {
			must(tb, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.js", j)), nil, 0o644))
		}
	}
	for _, d := range []string{".git/hooks", "vendor/lib/.git/hooks"} {
		must(tb, os.MkdirAll(filepath.Join(ws, d), 0o755))
	}
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error {
		return os.Lchown(p, sandbox.DefaultUID, sandbox.DefaultUID)
	})
}

// BenchmarkContainerNestedSearch measures what the search for nested
// repositories adds to a container call: a call of true in a workspace of
// about 54,000 entries (2,000 node_modules-like packages of 25 files)
// against one in a workspace holding only .git and the same nested
// repository (so that both bind the same protected paths), interleaved,
// for a warm container (call server) and a fresh one. It reports each
// p50 and the ratio of the large workspace's to the small one's.
func BenchmarkContainerNestedSearch(b *testing.B) {
	base, err := os.MkdirTemp("", "clawtool-bench-")
	must(b, err)
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	big, small := filepath.Join(base, "big"), filepath.Join(base, "small")
	nodeModulesWorkspace(b, big, 2000, 25)
	nodeModulesWorkspace(b, small, 0, 0)
	ctx := context.Background()
	for _, mode := range containerModes[:2] {
		c := requireEngineWith(b, mode.opts)
		times := map[string][]time.Duration{}
		run := func(ws string) {
			start := time.Now()
			r, err := c.Run(ctx, sandbox.Policy{Workspace: ws}, []string{"true"}, nil)
			if err != nil || !r.OK() || r.Mode != mode.mode {
				b.Fatalf("%s %s: %v %+v", mode.name, ws, err, r)
			}
			times[ws] = append(times[ws], time.Since(start))
		}
		// A warm container starts on its first call; that start is not
		// a call's latency.
		run(big)
		run(small)
		clear(times)
		for i := range b.N {
			if i%2 == 0 {
				run(big)
				run(small)
			} else {
				run(small)
				run(big)
			}
		}
		p50 := func(ds []time.Duration) float64 {
			s := slices.Clone(ds)
			slices.Sort(s)
			return float64(s[(len(s)-1)/2]) / float64(time.Millisecond)
		}
		b.ReportMetric(p50(times[big]), mode.name+"-54k-p50-ms")
		b.ReportMetric(p50(times[small]), mode.name+"-small-p50-ms")
		b.ReportMetric(p50(times[big])/p50(times[small]), mode.name+"-54k/small-p50")
	}
}
