package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
)

// BenchmarkReadFile reads a small file through the workspace's os.Root, as
// read_file does, and with os.ReadFile in the same loop, and reports the
// ratio of their times.
func BenchmarkReadFile(b *testing.B) {
	e := newEnv(b, sandbox.Policy{})
	abs := filepath.Join(e.ws, "a.txt")
	var viaRoot, direct []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := e.ts.readText("a.txt"); err != nil {
			b.Fatal(err)
		}
		viaRoot = append(viaRoot, time.Since(start))
		start = time.Now()
		if _, err := os.ReadFile(abs); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(start))
	}
	// Medians: a busy machine's outliers would swamp the means.
	r, d := median(viaRoot), median(direct)
	b.ReportMetric(float64(r)/float64(d), "root/readfile")
	b.ReportMetric(float64(r.Nanoseconds()), "root-p50-ns")
	b.ReportMetric(float64(d.Nanoseconds()), "readfile-p50-ns")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
