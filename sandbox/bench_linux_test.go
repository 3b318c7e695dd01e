package sandbox

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// bwrapArgs run /bin/true under bubblewrap with isolation equivalent to the
// sandbox's namespaces and mounts.
var bwrapArgs = []string{
	"--unshare-all", "--die-with-parent", "--new-session", "--uid", "65534", "--gid", "65534",
	"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
	"--cap-drop", "ALL", "/bin/true",
}

func lookBwrap(b *testing.B) string {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("bwrap is not installed; .ci/run installs bubblewrap")
		}
		b.Skip("bwrap is not installed (apt-get install bubblewrap)")
	}
	return p
}

// percentile returns the q-quantile of ds in milliseconds.
func percentile(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
}

// BenchmarkSpawn runs a no-op command with the full Linux stack and, in the
// same iteration, under bubblewrap with equivalent isolation, and reports
// both p50 and p90 and the ratio of the p50s. bubblewrap makes no cgroup, so
// the compared run does without one; the same iteration also runs the full
// stack with its cgroup leaf, reported apart (cgroup-*).
func BenchmarkSpawn(b *testing.B) {
	requireSandbox(b)
	bwrap := lookBwrap(b)
	ctx := context.Background()
	withCgroup := Probe().Has(LayerCgroup)
	var ours, theirs, leaf []time.Duration
	for b.Loop() {
		start := time.Now()
		r, err := Run(ctx, Policy{Without: []Layer{LayerCgroup}}, "/bin/true")
		if err != nil || !r.OK() {
			b.Fatalf("sandbox: %v %+v", err, r)
		}
		ours = append(ours, time.Since(start))
		start = time.Now()
		if out, err := exec.Command(bwrap, bwrapArgs...).CombinedOutput(); err != nil {
			b.Fatalf("bwrap: %v %s", err, out)
		}
		theirs = append(theirs, time.Since(start))
		if withCgroup {
			start = time.Now()
			r, err := Run(ctx, Policy{}, "/bin/true")
			if err != nil || !r.OK() || r.Cgroup == "" {
				b.Fatalf("sandbox with cgroup: %v %+v", err, r)
			}
			leaf = append(leaf, time.Since(start))
		}
	}
	b.ReportMetric(percentile(ours, 0.5), "sandbox-p50-ms")
	b.ReportMetric(percentile(ours, 0.9), "sandbox-p90-ms")
	b.ReportMetric(percentile(theirs, 0.5), "bwrap-p50-ms")
	b.ReportMetric(percentile(theirs, 0.9), "bwrap-p90-ms")
	b.ReportMetric(percentile(ours, 0.5)/percentile(theirs, 0.5), "p50-ratio")
	if withCgroup {
		b.ReportMetric(percentile(leaf, 0.5), "cgroup-p50-ms")
		b.ReportMetric(percentile(leaf, 0.9), "cgroup-p90-ms")
		b.ReportMetric(percentile(leaf, 0.5)/percentile(theirs, 0.5), "cgroup-p50-ratio")
	}
}

// BenchmarkSpawnLayers shows how the spawn cost splits: each step adds
// layers, and a plain fork and exec of the same command is the floor.
func BenchmarkSpawnLayers(b *testing.B) {
	requireSandbox(b)
	steps := []struct {
		name string
		p    Policy
	}{
		{"helper+rlimits", Policy{Without: []Layer{LayerUserNS, LayerLandlock, LayerSeccomp, LayerCgroup}}},
		{"+landlock+seccomp", Policy{Without: []Layer{LayerUserNS, LayerCgroup}}},
		{"+namespaces+mounts-netns", Policy{Without: []Layer{LayerNetNS, LayerCgroup}}},
		{"+netns(full,no-cgroup)", Policy{Without: []Layer{LayerCgroup}}},
		{"+cgroup", Policy{}},
	}
	ctx := context.Background()
	b.Run("fork+exec", func(b *testing.B) {
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		b.ReportMetric(percentile(ds, 0.5), "p50-ms")
	})
	for _, s := range steps {
		b.Run(s.name, func(b *testing.B) {
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				r, err := Run(ctx, s.p, "/bin/true")
				if err != nil || !r.OK() {
					b.Fatalf("%v %+v", err, r)
				}
				ds = append(ds, time.Since(start))
			}
			b.ReportMetric(percentile(ds, 0.5), "p50-ms")
			b.ReportMetric(percentile(ds, 0.9), "p90-ms")
		})
	}
}

// BenchmarkSpawnSplit shows where the time of one full-stack run goes, from
// timestamps the supervisor and the helper take at each step (p50 of each
// step, in milliseconds): starting the helper (clone into the namespaces,
// the user namespace's id maps, execve of the binary), the Go runtime's
// start until the helper's init, reading the configuration, the mounts,
// dropping capabilities, Landlock, seccomp, the rlimits, and the command's
// exec, run, exit and reaping.
func BenchmarkSpawnSplit(b *testing.B) {
	requireSandbox(b)
	names := []string{"start-helper", "runtime-start", "config", "mounts", "capabilities", "landlock", "seccomp", "rlimits", "lookup", "exec+run+reap"}
	steps := make([][]time.Duration, len(names))
	traceSpawn = func(stamps []uint64) {
		if len(stamps) != len(names)+1 {
			b.Errorf("%d timestamps, want %d", len(stamps), len(names)+1)
			return
		}
		for i := range names {
			steps[i] = append(steps[i], time.Duration(stamps[i+1]-stamps[i]))
		}
	}
	defer func() { traceSpawn = nil }()
	ctx := context.Background()
	for b.Loop() {
		r, err := Run(ctx, Policy{Without: []Layer{LayerCgroup}}, "/bin/true")
		if err != nil || !r.OK() {
			b.Fatalf("%v %+v", err, r)
		}
	}
	for i, n := range names {
		if len(steps[i]) > 0 {
			b.ReportMetric(percentile(steps[i], 0.5), n+"-ms")
		}
	}
}

// BenchmarkCgroupLeaf times what the cgroup layer adds to a run outside the
// helper: making the leaf with its limits, then removing it.
func BenchmarkCgroupLeaf(b *testing.B) {
	requireSandbox(b)
	cg := hostCgroups()
	if cg.version == 0 {
		b.Skip(cg.detail)
	}
	l := Limits{}.withDefaults()
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		lf, err := cg.newLeaf(l)
		if err != nil {
			b.Fatal(err)
		}
		if err := lf.remove(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(percentile(ds, 0.5), "p50-ms")
	b.ReportMetric(percentile(ds, 0.9), "p90-ms")
}
