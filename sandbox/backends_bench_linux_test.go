package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/container"
)

// BenchmarkBackends measures the per-call latency of a no-op command, in
// one run and interleaved so that every backend sees the same machine
// load: a plain fork and exec, the native backend, a warm container
// through its call server, a warm container with the engine's exec (the
// fallback) and a fresh container per call. It reports p50 and p90 of
// each, the ratios of the warm containers' p50 to the native backend's,
// and the call server's p50 over a plain fork and exec on the host.
func BenchmarkBackends(b *testing.B) {
	ctx := context.Background()
	if err := okRun(sandbox.DefaultNative().Run(ctx, sandbox.Policy{}, []string{"/bin/true"}, nil)); err != nil {
		b.Fatal(err)
	}
	inMode := func(cb sandbox.CatalogBackend) func() error {
		return func() error {
			r, err := cb.Backend.Run(ctx, sandbox.Policy{}, []string{"true"}, nil)
			if err == nil && r.Mode != cb.Mode {
				err = fmt.Errorf("ran in mode %s (%s), want %s", r.Mode, r.Fallback, cb.Mode)
			}
			return okRun(r, err)
		}
	}
	warm := containerBackend(container.Options{Warm: true}, sandbox.ModeWarmServer)(b)
	warmExec := containerBackend(container.Options{Warm: true, WarmExec: true}, sandbox.ModeWarmExec)(b)
	fresh := containerBackend(container.Options{}, sandbox.ModeFresh)(b)
	runs := []struct {
		name string
		run  func() error
		ds   []time.Duration
	}{
		{name: "fork+exec", run: func() error { return exec.Command("/bin/true").Run() }},
		{name: "native", run: func() error {
			return okRun(sandbox.DefaultNative().Run(ctx, sandbox.Policy{}, []string{"/bin/true"}, nil))
		}},
		{name: "warm-server", run: inMode(warm)},
		{name: "warm-exec", run: inMode(warmExec)},
		{name: "fresh", run: inMode(fresh)},
	}
	// A warm container starts on its first call; that start is not a
	// call's latency.
	for _, i := range []int{2, 3} {
		if err := runs[i].run(); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		for i := range runs {
			start := time.Now()
			if err := runs[i].run(); err != nil {
				b.Fatalf("%s: %v", runs[i].name, err)
			}
			runs[i].ds = append(runs[i].ds, time.Since(start))
		}
	}
	for _, r := range runs {
		b.ReportMetric(percentile(r.ds, 0.5), r.name+"-p50-ms")
		b.ReportMetric(percentile(r.ds, 0.9), r.name+"-p90-ms")
	}
	native := percentile(runs[1].ds, 0.5)
	b.ReportMetric(percentile(runs[2].ds, 0.5)/native, "warm-server/native-p50")
	b.ReportMetric(percentile(runs[3].ds, 0.5)/native, "warm-exec/native-p50")
	b.ReportMetric(percentile(runs[2].ds, 0.5)/percentile(runs[0].ds, 0.5), "warm-server/fork+exec-p50")
}

func okRun(r *sandbox.Result, err error) error {
	if err != nil {
		return err
	}
	if !r.OK() {
		return errors.New(r.Summary() + ": " + string(r.Stderr))
	}
	return nil
}

// percentile returns the q-quantile of ds in milliseconds.
func percentile(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
}
