package wasm

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkRun instantiates and runs a compiled module (hello) per
// iteration and reports the p50 and p90.
func BenchmarkRun(b *testing.B) {
	ctx := context.Background()
	r, err := NewRuntime(ctx, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close(ctx)
	m, err := r.Compile(ctx, helloModule())
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		res, err := m.Run(ctx, Config{})
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*9/10])/1e6, "p90-ms")
}

// BenchmarkCompileFromDiskCache compiles a module in a fresh runtime whose
// cache directory already holds it, against compiling it with no cache.
func BenchmarkCompileFromDiskCache(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	bin := floodModule()
	warm, _ := NewRuntime(ctx, Options{CacheDir: dir})
	warm.Compile(ctx, bin)
	warm.Close(ctx)
	var cached, cold time.Duration
	for b.Loop() {
		for _, d := range []string{dir, ""} {
			r, err := NewRuntime(ctx, Options{CacheDir: d})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if _, err := r.Compile(ctx, bin); err != nil {
				b.Fatal(err)
			}
			if d == "" {
				cold += time.Since(start)
			} else {
				cached += time.Since(start)
			}
			r.Close(ctx)
		}
	}
	b.ReportMetric(float64(cached)/float64(cold), "cached/cold")
}
