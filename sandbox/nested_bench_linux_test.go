package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/protected"
)

// nodeModules makes a workspace like one holding node_modules: pkgs
// packages of a package.json and files-1 sources under lib/, 2 deep, with
// one nested repository (vendor/lib) and the workspace's own .git.
func nodeModules(tb testing.TB, ws string, pkgs, files int) {
	tb.Helper()
	for i := range pkgs {
		dir := filepath.Join(ws, "node_modules", fmt.Sprintf("@s%d", i%50), fmt.Sprintf("p%d", i), "lib")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "..", "package.json"), []byte("{}"), 0o644); err != nil {
			tb.Fatal(err)
		}
		for j := range files - 1 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.js", j)), nil, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for _, d := range []string{".git/hooks", "vendor/lib/.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	filepathWalkChown(ws, DefaultUID)
}

// BenchmarkNestedSearch measures the search for nested repositories every
// run with git's paths protected pays, in a workspace of about 52,000
// entries (2,000 packages of 25 files, node_modules-like), interleaved
// with its baseline: filepath.WalkDir over the same tree, the standard
// library's walk reading the same entries. It also times a run of
// /bin/true in that workspace against one in a workspace holding only
// .git, to give the search's share of a run.
func BenchmarkNestedSearch(b *testing.B) {
	requireSandbox(b)
	base, err := os.MkdirTemp("", "clawtool-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	big, small := filepath.Join(base, "big"), filepath.Join(base, "small")
	nodeModules(b, big, 2000, 25)
	nodeModules(b, small, 0, 0)
	entries := 0
	filepath.WalkDir(big, func(string, fs.DirEntry, error) error { entries++; return nil })
	n := newTestNative(b, NativeOptions{Spares: DefaultSpares}, &nativeHooks{})
	ctx := context.Background()
	var searchT, walkT, bigT, smallT []time.Duration
	paths := DefaultProtected()
	run := func(ws string, into *[]time.Duration) {
		start := time.Now()
		r, err := runOn(n, ctx, Policy{Workspace: ws, Without: []Layer{LayerCgroup}}, "/bin/true")
		if err != nil || !r.OK() {
			b.Fatalf("%s: %v %+v", ws, err, r)
		}
		*into = append(*into, time.Since(start))
	}
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		got, err := protected.Nested(big, paths, protected.Bounds{Entries: DefaultGitSearch, Depth: GitSearchDepth})
		if err != nil || len(got) <= len(paths) {
			b.Fatalf("search: %v (%d paths)", err, len(got))
		}
		searchT = append(searchT, time.Since(start))
		start = time.Now()
		filepath.WalkDir(big, func(string, fs.DirEntry, error) error { return nil })
		walkT = append(walkT, time.Since(start))
		if i%2 == 0 {
			run(big, &bigT)
			run(small, &smallT)
		} else {
			run(small, &smallT)
			run(big, &bigT)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(entries), "entries")
	b.ReportMetric(percentile(searchT, 0.5), "search-p50-ms")
	b.ReportMetric(percentile(walkT, 0.5), "walkdir-p50-ms")
	b.ReportMetric(percentile(searchT, 0.5)/percentile(walkT, 0.5), "search/walkdir-p50")
	b.ReportMetric(percentile(bigT, 0.5), "run-52k-p50-ms")
	b.ReportMetric(percentile(smallT, 0.5), "run-small-p50-ms")
	b.ReportMetric(percentile(bigT, 0.5)/percentile(smallT, 0.5), "run-52k/small-p50")
}
