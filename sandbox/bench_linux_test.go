package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// unshareArgs run /bin/true in the namespaces the sandbox makes (user,
// PID, mount, UTS, IPC, network), the user namespace's root mapped onto
// this process's user (the id map's cost does not depend on whom it
// names), with nothing else: the floor of BenchmarkSpawn.
var unshareArgs = []string{"--user", "--map-root-user", "--pid", "--fork", "--mount", "--uts", "--ipc", "--net", "/bin/true"}

func lookUnshare(b *testing.B) string {
	p, err := exec.LookPath("unshare")
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal("unshare (util-linux) is not installed")
		}
		b.Skip("unshare is not installed (apt-get install util-linux)")
	}
	return p
}

// subreap makes this process the child subreaper of its descendants (see
// PR_SET_CHILD_SUBREAPER in prctl(2)) until b ends: a process whose parent
// exits without reaping it becomes this process's child, not init's, so
// that reapLeft can reap it and count its CPU.
func subreap(b *testing.B) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.Fatalf("become a child subreaper: %v", err)
	}
	b.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

// reapLeft waits for and reaps every child of this process named comm
// (its /proc comm), and returns how many. With subreap, these are the
// processes a program of that name left behind when it exited without
// reaping them: reaped here, their CPU (and that of what they reaped)
// reaches this process's children's count, as a helper's does.
func reapLeft(b *testing.B, comm string) int {
	n := 0
	for _, pid := range children() {
		name, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if err != nil || strings.TrimSpace(string(name)) != comm {
			continue
		}
		var ws unix.WaitStatus
		for {
			_, err = unix.Wait4(pid, &ws, 0, nil)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil {
			b.Fatalf("reap %s's orphan %d: %v", comm, pid, err)
		}
		n++
	}
	return n
}

// percentile returns the q-quantile of ds in milliseconds.
func percentile(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))]) / float64(time.Millisecond)
}

// BenchmarkSpawn runs a no-op command with the full Linux stack and, in the
// same iteration, under bubblewrap with equivalent isolation, and reports
// both p50 and p90 and the ratio of the p50s. The sandbox run is served by
// a spare helper (started in the background by the run before); the same
// iteration also runs the same policy cold (on a backend without spares,
// cold-*), so
// both are measured under the same load. bubblewrap makes no cgroup, so the
// compared runs do without one; the iteration also runs the full stack with
// its cgroup leaf, from a spare, reported apart (cgroup-*), on a backend
// of its own.
//
// What a sandbox run leaves in the background (the next spare's start,
// begun at its claim; the helper's exit in fork mode) is waited for after
// it, outside the timing, so that it is charged neither to the next run
// nor to bubblewrap's; the run itself bears the start of its successor,
// which runs beside it.
//
// floor-* is what any run in these namespaces pays: unshare(1) making
// the sandbox's namespaces with a one-line id map each, forking and
// executing /bin/true in them (see unshareArgs), with no mount but its
// making the mounts private, no layer, no pivot; counted as bubblewrap's
// run is.
//
// The CPU per run (*-cpu-ms) is that of this process and its reaped
// children from the start of a run until what it left in the background is
// done: for a run from a spare, the start of the spare that serves the next
// run (the fork here, the helper's runtime and root there, charged when the
// helper is reaped) is in it, as it is for bubblewrap, whose whole start is
// its run.
//
// Every process of a run is counted, bubblewrap's as the sandbox's:
// bubblewrap exits without reaping its child (the init of the run's PID
// namespace, which makes the mounts and the pivot, reaps the command and
// tears the namespaces down as it exits), which would then be reaped by
// the system's init and its CPU go uncounted. This process is a child
// subreaper for the loop (see subreap), so that child becomes its own and
// is reaped after each bubblewrap run (bwrap-orphans, per run);
// bwrap-unreaped-cpu-ms is bubblewrap's CPU without it, as runs before
// 2026-12-07 15:50 UTC counted it. After the loop no process of any run
// may be left unreaped.
//
// The default backends (n, coldN) start their helpers from their forker
// (this program, here the test binary, re-executed in forker mode);
// direct-cold-* is the same cold run on a default backend that starts
// every helper itself (nativeHooks.directStart), as the default did
// before it had a forker.
//
// prog-* are the same runs on backends whose helper is the program of its
// own (NativeOptions.Helper, built here from this tree without cgo), each
// helper started by this process itself: from a spare (prog-*) and cold
// (prog-cold-*). fork-* are the same again with the helper program's
// forker starting the helpers (the default for a helper program): from a
// spare (fork-*) and cold (fork-cold-*). The forker's own CPU (its start
// and its work for every run) reaches this process's children's count
// when it is reaped, at the backend's Close after the loop: it is measured
// there and spread over the runs it served (fork-*-cpu-ms include it;
// forker-cpu-ms is that share alone); so is the default backends'
// (sandbox-cpu-ms and cold-cpu-ms include it; default-forker-cpu-ms is
// coldN's share alone).
//
// clawtool-cold-* is the default's cold run in a program as large as a
// user's: the clawtool command, built here as go build builds it, is the
// program its forker and helpers re-execute (NativeOptions.Helper names
// it, with its forker, as the default names its own program). A Go
// program's start grows with the program (the runtime enters every
// interface table the binary holds, and faults in more of it), so the
// test binary the other default rows re-execute is a small program's
// case; this row is the clawtool command's, its forker's CPU counted as
// the default's is.
func BenchmarkSpawn(b *testing.B) {
	requireSandbox(b)
	bwrap := lookBwrap(b)
	unshare := lookUnshare(b)
	ctx := context.Background()
	withCgroup := Probe().Has(LayerCgroup)
	noCgroup := Policy{Without: []Layer{LayerCgroup}}
	// Two backends, so that both are measured under the same load: n
	// keeps spares, as DefaultNative does, cold keeps none.
	n := newTestNative(b, NativeOptions{Spares: DefaultSpares}, nil)
	coldN := newTestNative(b, NativeOptions{}, nil)
	// The runs with a cgroup leaf have a backend of their own, so that n's
	// forker serves n's measured runs alone.
	leafN := newTestNative(b, NativeOptions{Spares: DefaultSpares}, nil)
	direct := &nativeHooks{directStart: true}
	directColdN := newTestNative(b, NativeOptions{}, direct)
	program := BuildHelperProgram(b, "")
	progN := newTestNative(b, NativeOptions{Spares: DefaultSpares, Helper: program}, direct)
	progColdN := newTestNative(b, NativeOptions{Helper: program}, direct)
	forkN := newTestNative(b, NativeOptions{Spares: DefaultSpares, Helper: program}, nil)
	forkColdN := newTestNative(b, NativeOptions{Helper: program}, nil)
	bigColdN := newTestNative(b, NativeOptions{Helper: BuildClawtool(b)}, nil)
	var ours, theirs, floor, cold, leaf, directCold, prog, progCold, fork, forkCold, bigCold []time.Duration
	var orphans int
	var theirsUnreaped int64 // bubblewrap's CPU without its orphan's, as counted before
	var oursCPU, theirsCPU, floorCPU, coldCPU, directColdCPU, progCPU, progColdCPU, forkCPU, forkColdCPU, bigColdCPU int64
	cpu := func() int64 {
		self, children := cpuTimes()
		return self + children
	}
	subreap(b)
	for b.Loop() {
		c0 := cpu()
		start := time.Now()
		r, err := runOn(n, ctx, noCgroup, "/bin/true")
		if err != nil || !r.OK() {
			b.Fatalf("sandbox: %v %+v", err, r)
		}
		ours = append(ours, time.Since(start))
		settle(b, n, coldN)
		c1 := cpu()
		start = time.Now()
		if out, err := exec.Command(bwrap, bwrapArgs...).CombinedOutput(); err != nil {
			b.Fatalf("bwrap: %v %s", err, out)
		}
		theirs = append(theirs, time.Since(start))
		self2, children2 := cpuTimes()
		// bubblewrap exits without reaping its child, the init of the
		// run's PID namespace, which did the run's mounts and pivot and
		// reaped the command: reaped here, its CPU is counted, as a
		// helper's is. What this process spends finding it is not.
		orphans += reapLeft(b, "bwrap")
		_, children3 := cpuTimes()
		theirsUnreaped += self2 + children2 - c1
		theirsCPU += self2 + children3 - c1
		c2 := cpu()
		start = time.Now()
		if out, err := exec.Command(unshare, unshareArgs...).CombinedOutput(); err != nil {
			b.Fatalf("namespaces alone: %v %s", err, out)
		}
		floor = append(floor, time.Since(start))
		f1 := cpu()
		floorCPU += f1 - c2
		start = time.Now()
		r, err = runOn(coldN, ctx, noCgroup, "/bin/true")
		if err != nil || !r.OK() {
			b.Fatalf("sandbox cold: %v %+v", err, r)
		}
		cold = append(cold, time.Since(start))
		settle(b, n, coldN)
		c3 := cpu()
		oursCPU += c1 - c0
		coldCPU += c3 - f1
		for _, v := range []struct {
			n     *Native
			times *[]time.Duration
			cpu   *int64
		}{{directColdN, &directCold, &directColdCPU}, {progN, &prog, &progCPU}, {progColdN, &progCold, &progColdCPU}, {forkN, &fork, &forkCPU}, {forkColdN, &forkCold, &forkColdCPU}, {bigColdN, &bigCold, &bigColdCPU}} {
			c0 := cpu()
			start := time.Now()
			r, err := runOn(v.n, ctx, noCgroup, "/bin/true")
			if err != nil || !r.OK() {
				b.Fatalf("sandbox (started by this process or with a helper program): %v %+v", err, r)
			}
			*v.times = append(*v.times, time.Since(start))
			settle(b, v.n)
			*v.cpu += cpu() - c0
		}
		if withCgroup {
			start = time.Now()
			r, err := runOn(leafN, ctx, Policy{}, "/bin/true")
			if err != nil || !r.OK() || r.Cgroup == "" {
				b.Fatalf("sandbox with cgroup: %v %+v", err, r)
			}
			leaf = append(leaf, time.Since(start))
			settle(b, leafN)
		}
	}
	leafN.Close()
	directColdN.Close()
	progN.Close()
	progColdN.Close()
	if directColdN.forkerPid() != 0 || progN.forkerPid() != 0 || progColdN.forkerPid() != 0 {
		b.Fatal("a backend told to start its helpers itself has a forker")
	}
	// The forkers' CPU, counted when Close reaps them (with, for n and
	// forkN, their idle spares': counted against them too).
	for _, fn := range []*Native{n, coldN, forkN, forkColdN, bigColdN} {
		if fn.forkerPid() == 0 {
			b.Fatal("a forker backend has no forker: its runs were not started by one")
		}
	}
	closed := func(n *Native) int64 {
		c0 := cpu()
		n.Close()
		return cpu() - c0
	}
	oursCPU += closed(n)
	defaultForkerCPU := closed(coldN)
	coldCPU += defaultForkerCPU
	forkCPU += closed(forkN)
	forkerCPU := closed(forkColdN)
	forkColdCPU += forkerCPU
	bigColdCPU += closed(bigColdN)
	// Counted the same way: no run of the sandbox's (nor unshare's) left
	// a process it did not reap, whose CPU would go uncounted.
	if left := children(); len(left) > 0 {
		b.Fatalf("processes left unreaped after the runs: %v", left)
	}
	b.ReportMetric(percentile(ours, 0.5), "sandbox-p50-ms")
	b.ReportMetric(percentile(ours, 0.9), "sandbox-p90-ms")
	b.ReportMetric(percentile(theirs, 0.5), "bwrap-p50-ms")
	b.ReportMetric(percentile(theirs, 0.9), "bwrap-p90-ms")
	b.ReportMetric(percentile(ours, 0.5)/percentile(theirs, 0.5), "p50-ratio")
	b.ReportMetric(percentile(cold, 0.5), "cold-p50-ms")
	b.ReportMetric(percentile(cold, 0.9), "cold-p90-ms")
	b.ReportMetric(percentile(cold, 0.5)/percentile(theirs, 0.5), "cold-p50-ratio")
	runs := float64(len(ours)) * 1e6
	b.ReportMetric(float64(oursCPU)/runs, "sandbox-cpu-ms")
	b.ReportMetric(float64(coldCPU)/runs, "cold-cpu-ms")
	b.ReportMetric(float64(theirsCPU)/runs, "bwrap-cpu-ms")
	b.ReportMetric(float64(theirsUnreaped)/runs, "bwrap-unreaped-cpu-ms")
	b.ReportMetric(float64(orphans)/float64(len(ours)), "bwrap-orphans")
	b.ReportMetric(float64(oursCPU)/float64(theirsCPU), "cpu-ratio")
	b.ReportMetric(percentile(floor, 0.5), "floor-p50-ms")
	b.ReportMetric(percentile(floor, 0.5)/percentile(theirs, 0.5), "floor-p50-ratio")
	b.ReportMetric(float64(floorCPU)/runs, "floor-cpu-ms")
	b.ReportMetric(float64(floorCPU)/float64(theirsCPU), "floor-cpu-ratio")
	b.ReportMetric(float64(coldCPU)/float64(theirsCPU), "cold-cpu-ratio")
	b.ReportMetric(float64(defaultForkerCPU)/runs, "default-forker-cpu-ms")
	b.ReportMetric(percentile(directCold, 0.5), "direct-cold-p50-ms")
	b.ReportMetric(percentile(directCold, 0.9), "direct-cold-p90-ms")
	b.ReportMetric(percentile(directCold, 0.5)/percentile(theirs, 0.5), "direct-cold-p50-ratio")
	b.ReportMetric(float64(directColdCPU)/runs, "direct-cold-cpu-ms")
	b.ReportMetric(float64(directColdCPU)/float64(theirsCPU), "direct-cold-cpu-ratio")
	reportHelperRow(b, "prog", prog, progCold, theirs, progCPU, progColdCPU, theirsCPU)
	reportHelperRow(b, "fork", fork, forkCold, theirs, forkCPU, forkColdCPU, theirsCPU)
	b.ReportMetric(float64(forkerCPU)/runs, "forker-cpu-ms")
	b.ReportMetric(percentile(bigCold, 0.5), "clawtool-cold-p50-ms")
	b.ReportMetric(percentile(bigCold, 0.9), "clawtool-cold-p90-ms")
	b.ReportMetric(percentile(bigCold, 0.5)/percentile(theirs, 0.5), "clawtool-cold-p50-ratio")
	b.ReportMetric(float64(bigColdCPU)/runs, "clawtool-cold-cpu-ms")
	b.ReportMetric(float64(bigColdCPU)/float64(theirsCPU), "clawtool-cold-cpu-ratio")
	if withCgroup {
		b.ReportMetric(percentile(leaf, 0.5), "cgroup-p50-ms")
		b.ReportMetric(percentile(leaf, 0.9), "cgroup-p90-ms")
		b.ReportMetric(percentile(leaf, 0.5)/percentile(theirs, 0.5), "cgroup-p50-ratio")
	}
}

// reportHelperRow reports one configuration's rows of BenchmarkSpawn
// under the metric prefix name: the p50 from a spare and its ratio to
// bubblewrap's (theirs), the cold p50 and p90 and the p50's ratio, and the
// CPU per run of both (cpu and coldCPU, in ns over all runs) and their
// ratios to bubblewrap's (theirsCPU over as many runs).
func reportHelperRow(b *testing.B, name string, warm, cold, theirs []time.Duration, cpu, coldCPU, theirsCPU int64) {
	runs := float64(len(theirs)) * 1e6
	b.ReportMetric(percentile(warm, 0.5), name+"-p50-ms")
	b.ReportMetric(percentile(warm, 0.5)/percentile(theirs, 0.5), name+"-p50-ratio")
	b.ReportMetric(percentile(cold, 0.5), name+"-cold-p50-ms")
	b.ReportMetric(percentile(cold, 0.9), name+"-cold-p90-ms")
	b.ReportMetric(percentile(cold, 0.5)/percentile(theirs, 0.5), name+"-cold-p50-ratio")
	b.ReportMetric(float64(cpu)/runs, name+"-cpu-ms")
	b.ReportMetric(float64(coldCPU)/runs, name+"-cold-cpu-ms")
	b.ReportMetric(float64(cpu)/float64(theirsCPU), name+"-cpu-ratio")
	b.ReportMetric(float64(coldCPU)/float64(theirsCPU), name+"-cold-cpu-ratio")
}

// settle waits, with b's timer stopped, until no spare start, discard or
// background reap of the backends ns is under way.
func settle(b *testing.B, ns ...*Native) {
	b.StopTimer()
	for _, n := range ns {
		n.settle()
	}
	b.StartTimer()
}

// BenchmarkSpawnLayers shows how the spawn cost splits: each step adds
// layers, and a plain fork and exec of the same command is the floor. The
// runs start cold (no spares), as every run did before spares.
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
	cold := newTestNative(b, NativeOptions{}, nil)
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
				r, err := runOn(cold, ctx, s.p, "/bin/true")
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
// step, in milliseconds), for runs back to back, cold and from spares.
//
// cold: starting the helper (clone into the namespaces, the user
// namespace's id maps, execve of the binary), the Go runtime's start until
// the helper's init, the part of the root no policy changes
// (prepare-root), reading the configuration, the policy's mounts and the
// pivot (mounts), dropping capabilities, Landlock, seccomp, the rlimits,
// the lookup of the command, and the command's exec, run, exit and
// reaping.
//
// spare: the same three first steps, taken by the spare before the run
// (prestart-*: off the run's path but not free), then from the claim until
// the helper read its configuration (claim+config; it includes waiting for
// a spare whose runtime had not started yet, counted in unready-%), and
// the same steps after; run-ms is claim to reap.
//
// spare-paused: spare runs 20 ms apart (think time, outside the timed
// loop), so that each claim finds its spare idle and nothing else of the
// sandbox runs beside the run: the best case, as between an agent's calls.
//
// All report the CPU per run of this process (cpu-self-ms: the forks,
// the copies) and of its reaped children (cpu-children-ms: the helpers
// and commands, a spare's pre-start included); the spares left at the end
// are released and reaped before the count.
func BenchmarkSpawnSplit(b *testing.B) {
	requireSandbox(b)
	steps := []string{"mounts", "capabilities", "landlock", "seccomp", "rlimits", "lookup"}
	for _, mode := range []string{"cold", "spare", "spare-paused"} {
		spare := mode != "cold"
		b.Run(mode, func(b *testing.B) {
			m := map[string][]time.Duration{}
			unready, runs := 0, 0
			var entered, reaped uint64 // around the last run
			trace := func(t spawnTrace) {
				reaped = t.reaped
				if t.spare != spare {
					return // the first run of the spares is cold
				}
				if n := len(t.helper); n != 9 && !(t.forked && n == 11) {
					b.Errorf("%d helper timestamps, want 9 (11 in fork mode)", n)
					return
				}
				h := t.helper
				d := func(name string, from, to uint64) { m[name] = append(m[name], time.Duration(to-from)) }
				pre := ""
				if t.spare {
					pre = "prestart-"
					d("claim+config", t.claim, h[2])
					d("before-claim", entered, t.claim)
					d("run", t.claim, t.reaped)
					runs++
					if h[1] > t.claim {
						unready++
					}
				} else {
					d("config", h[1], h[2])
					d("run", t.start[0], t.reaped)
				}
				d(pre+"start-helper", t.start[0], t.start[1])
				d(pre+"runtime-start", t.start[1], h[0])
				d(pre+"prepare-root", h[0], h[1])
				for i, n := range steps {
					d(n, h[i+2], h[i+3])
				}
				d("exec+run+reap", h[8], t.reaped)
				if t.forked {
					// The command's fork and execve; its run, exit and
					// reaping by the helper; the record's way to the run.
					d("fork-exec", h[8], h[9])
					d("run+wait", h[9], h[10])
					d("report", h[10], t.reaped)
				}
			}
			o := NativeOptions{}
			if spare {
				o.Spares = DefaultSpares
			}
			n := newTestNative(b, o, &nativeHooks{trace: trace})
			ctx := context.Background()
			self0, children0 := cpuTimes()
			for b.Loop() {
				entered = monotonic()
				r, err := runOn(n, ctx, Policy{Without: []Layer{LayerCgroup}}, "/bin/true")
				if err != nil || !r.OK() {
					b.Fatalf("%v %+v", err, r)
				}
				if reaped != 0 {
					m["after-reap"] = append(m["after-reap"], time.Duration(monotonic()-reaped))
				}
				if mode == "spare-paused" {
					// Think time: the next spare is ready and idle at the
					// claim, as between an agent's tool calls.
					b.StopTimer()
					time.Sleep(20 * time.Millisecond)
					b.StartTimer()
				}
			}
			n.Close()
			self1, children1 := cpuTimes()
			for n, ds := range m {
				b.ReportMetric(percentile(ds, 0.5), n+"-ms")
			}
			b.ReportMetric(percentile(m["run"], 0.9), "run-p90-ms")
			if spare {
				if runs > 0 {
					b.ReportMetric(100*float64(unready)/float64(runs), "unready-%")
				}
			}
			b.ReportMetric(float64(self1-self0)/float64(b.N)/1e6, "cpu-self-ms")
			b.ReportMetric(float64(children1-children0)/float64(b.N)/1e6, "cpu-children-ms")
		})
	}
}

// cpuTimes returns the user and system CPU of this process and of its
// reaped children, in nanoseconds.
func cpuTimes() (self, children int64) {
	var s, c syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &s)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c)
	ns := func(r syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
	return ns(s), ns(c)
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

// BenchmarkSpawnWorkspace measures what the supervisor's opening of the
// workspace costs a run (open_tree, the idmapping, the descriptor passed
// to the helper), interleaved in one loop so that all three see the same
// load, each run from a spare without a cgroup: helper-* is the helper
// looking the workspace up itself (as before; the workspace belongs to
// the sandbox user), tree-* the supervisor's copy of that workspace (no
// idmapping needed), idmap-* the supervisor's idmapped copy of a
// workspace root owns. Those three bind the workspace directly
// (Policy.Without LayerWriteBudget); budget-* is the idmapped workspace
// through the write budget's overlay (its tmpfs, the overlay mount, the
// descriptor sent back, an empty apply step), and write-direct-* and
// write-budget-* a command writing 100 files of 4 KiB to it directly and
// through the overlay and the apply step. Every workspace holds .git
// (hooks, config) and .claude (commands, agents), so each run also binds
// their parents onto themselves.
func BenchmarkSpawnWorkspace(b *testing.B) {
	requireSandbox(b)
	ctx := context.Background()
	// Reachable by the sandbox user, for the helper's own lookup.
	base, err := os.MkdirTemp("", "clawtool-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	mk := func(name string, uid int) string {
		ws := base + "/" + name
		for _, d := range []string{".git/hooks", ".git/objects", ".claude/commands", ".claude/agents"} {
			if err := os.MkdirAll(ws+"/"+d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(ws+"/.git/config", []byte("[core]\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		filepathWalkChown(ws, uid)
		return ws
	}
	sandboxWS, rootWS := mk("nobody", DefaultUID), mk("root", 0)
	hooks := &nativeHooks{}
	n := newTestNative(b, NativeOptions{Spares: DefaultSpares}, hooks)
	var helperT, treeT, idmapT, budgetT, writeDirectT, writeBudgetT []time.Duration
	const writes = "for i in $(seq 100); do head -c 4096 /dev/zero > f$i; done"
	run := func(ws string, inHelper, budget bool, into *[]time.Duration, argv ...string) {
		hooks.workspaceInHelper = inHelper
		p := Policy{Workspace: ws, Without: []Layer{LayerCgroup, LayerWriteBudget}}
		if budget {
			p.Without = []Layer{LayerCgroup}
		}
		if len(argv) == 0 {
			argv = []string{"/bin/true"}
		}
		start := time.Now()
		r, err := runOn(n, ctx, p, argv...)
		if err != nil || !r.OK() || slices.Contains(r.Layers, LayerWriteBudget) != budget {
			b.Fatalf("%s (helper lookup %v, budget %v): %v %+v", ws, inHelper, budget, err, r)
		}
		*into = append(*into, time.Since(start))
		settle(b, n)
	}
	for b.Loop() {
		run(sandboxWS, true, false, &helperT)
		run(sandboxWS, false, false, &treeT)
		run(rootWS, false, false, &idmapT)
		run(rootWS, false, true, &budgetT)
		run(rootWS, false, false, &writeDirectT, "sh", "-c", writes)
		run(rootWS, false, true, &writeBudgetT, "sh", "-c", writes)
	}
	n.Close()
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"helper", helperT}, {"tree", treeT}, {"idmap", idmapT}, {"budget", budgetT}, {"write-direct", writeDirectT}, {"write-budget", writeBudgetT}} {
		b.ReportMetric(percentile(m.ds, 0.5), m.name+"-p50-ms")
		b.ReportMetric(percentile(m.ds, 0.9), m.name+"-p90-ms")
	}
	b.ReportMetric(percentile(treeT, 0.5)/percentile(helperT, 0.5), "tree-p50-ratio")
	b.ReportMetric(percentile(idmapT, 0.5)/percentile(helperT, 0.5), "idmap-p50-ratio")
	b.ReportMetric(percentile(budgetT, 0.5)/percentile(idmapT, 0.5), "budget/idmap-p50-ratio")
	b.ReportMetric(percentile(writeBudgetT, 0.5)/percentile(writeDirectT, 0.5), "write-budget/direct-p50-ratio")
}

func filepathWalkChown(dir string, uid int) {
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
}

// BenchmarkSpawnCPU splits the CPU of a cold run with the helper program
// (no cgroup leaf, /bin/true) between this process (self-ms: the
// supervisor), its reaped children (children-ms: the helper and the
// command) and, for runs via the forker, the forker (forker-ms: counted
// when Close reaps it after the loop, spread over the runs it served),
// for helpers started by this process (direct-*) and by the forker
// (fork-*), interleaved. It also runs, on the forker backend, the same
// run without one layer each, so that what each layer costs shows as a
// difference to the full run (layer-*-ms, CPU of the supervisor and its
// children; the forker's work, the same for all, is not in them).
func BenchmarkSpawnCPU(b *testing.B) {
	requireSandbox(b)
	program := BuildHelperProgram(b, "")
	ctx := context.Background()
	direct := newTestNative(b, NativeOptions{Helper: program}, &nativeHooks{directStart: true})
	fork := newTestNative(b, NativeOptions{Helper: program}, nil)
	layers := newTestNative(b, NativeOptions{Helper: program}, nil)
	base := []Layer{LayerCgroup}
	runs := []struct {
		name string
		n    *Native
		p    Policy
	}{
		{"direct", direct, Policy{Without: base}},
		{"fork", fork, Policy{Without: base}},
		{"layer-full", layers, Policy{Without: base}},
		{"layer-no-seccomp", layers, Policy{Without: append(slices.Clone(base), LayerSeccomp)}},
		{"layer-no-landlock", layers, Policy{Without: append(slices.Clone(base), LayerLandlock)}},
		{"layer-no-rlimits", layers, Policy{Without: append(slices.Clone(base), LayerRlimits)}},
	}
	self := make([]int64, len(runs))
	children := make([]int64, len(runs))
	for b.Loop() {
		for i, r := range runs {
			s0, c0 := cpuTimes()
			res, err := runOn(r.n, ctx, r.p, "/bin/true")
			if err != nil || !res.OK() {
				b.Fatalf("%s: %v %+v", r.name, err, res)
			}
			settle(b, r.n)
			s1, c1 := cpuTimes()
			self[i] += s1 - s0
			children[i] += c1 - c0
		}
	}
	if fork.forkerPid() == 0 || direct.forkerPid() != 0 {
		b.Fatal("the forker backend has no forker, or the direct one has one")
	}
	_, c0 := cpuTimes()
	fork.Close()
	_, c1 := cpuTimes()
	n := float64(b.N) * 1e6
	for i, r := range runs[:2] {
		b.ReportMetric(float64(self[i])/n, r.name+"-self-ms")
		b.ReportMetric(float64(children[i])/n, r.name+"-children-ms")
	}
	b.ReportMetric(float64(c1-c0)/n, "fork-forker-ms")
	b.ReportMetric(float64(self[0]+children[0])/n, "direct-cpu-ms")
	b.ReportMetric(float64(self[1]+children[1]+c1-c0)/n, "fork-cpu-ms")
	full := float64(self[2] + children[2])
	for i, r := range runs[3:] {
		b.ReportMetric((full-float64(self[i+3]+children[i+3]))/n, strings.TrimPrefix(r.name, "layer-no-")+"-ms")
	}
}
