package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireCgroup stops a test that needs a cgroup leaf per run: it fails in
// CI, whose hosts have writable cgroup v1 memory and pids hierarchies, and
// skips elsewhere with the reason.
func requireCgroup(t *testing.T) cgroupHost {
	t.Helper()
	requireSandbox(t)
	cg := hostCgroups()
	if cg.version != 0 {
		return cg
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(cg.detail)
	}
	t.Skip(cg.detail)
	return cg
}

// leaves lists this process's run leaves still present on the host.
func leaves(cg cgroupHost) []string {
	var out []string
	for _, dir := range []string{cg.parent, cg.memory, cg.pids} {
		if dir == "" {
			continue
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), leafPrefix+strconv.Itoa(os.Getpid())+"-") {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

func checkCgroupRun(t *testing.T, f *fixture, cg cgroupHost, r *Result) {
	t.Helper()
	if want := "v" + strconv.Itoa(cg.version); r.Cgroup != want || r.Layers[0] != LayerCgroup {
		t.Errorf("result cgroup %q layers %v, want %s first", r.Cgroup, r.Layers, LayerCgroup)
	}
	// A helper in fork mode and its leaf are reaped just after the run.
	DefaultNative().settle()
	if l := leaves(cg); len(l) > 0 {
		t.Errorf("leaves left after the run: %v", l)
	}
	if n := leftovers(f.mark); n > 0 {
		killLeftovers(f.mark)
		t.Errorf("%d processes left behind", n)
	}
}

// TestCgroupMemoryBomb runs four processes that each take 80 MiB under a
// limit of 256 MiB for the whole run: each stays under the limit, so only
// the cgroup can stop them, and the run is classified from its OOM count.
func TestCgroupMemoryBomb(t *testing.T) {
	cg := requireCgroup(t)
	f := newFixture(t)
	// Positive control: the same policy without the cgroup lets it through
	// (RLIMIT_DATA bounds each process only). A -race build cannot run
	// under RLIMIT_DATA at all, so there the control goes without it.
	p := f.policy()
	p.Limits.Memory = 256 << 20
	p.Without = []Layer{LayerCgroup}
	if raceEnabled {
		p.Without = append(p.Without, LayerRlimits)
	}
	r := f.sandboxed(t, context.Background(), DefaultNative(), p, "allocmany", "4", "80")
	if !strings.HasPrefix(string(r.Stdout), "OK") || r.Cgroup != "" {
		t.Fatalf("positive control: without the cgroup: %s, cgroup %q, stdout %q stderr %q", r.Summary(), r.Cgroup, r.Stdout, trim(r.Stderr))
	}
	p.Without = nil
	r = f.sandboxed(t, context.Background(), DefaultNative(), p, "allocmany", "4", "80")
	if r.Outcome != MemoryLimit || strings.HasPrefix(string(r.Stdout), "OK") {
		t.Errorf("outcome %s (%s), want %s; stdout %q stderr %q", r.Outcome, r.Summary(), MemoryLimit, r.Stdout, trim(r.Stderr))
	}
	checkCgroupRun(t, f, cg, r)
}

// TestCgroupForkBomb starts more processes than the limit allows and
// checks that the cgroup refused them and the run is classified from its
// counter.
func TestCgroupForkBomb(t *testing.T) {
	cg := requireCgroup(t)
	f := newFixture(t)
	p := f.policy()
	p.Limits.Processes = 30
	r := f.sandboxed(t, context.Background(), DefaultNative(), p, "spawn", "100")
	if r.Outcome != PIDsLimit || !strings.Contains(string(r.Stdout), "resource temporarily unavailable") {
		t.Errorf("outcome %s (%s), want %s; stdout %q stderr %q", r.Outcome, r.Summary(), PIDsLimit, r.Stdout, trim(r.Stderr))
	}
	checkCgroupRun(t, f, cg, r)
}

// TestCgroupLeafRemovedAfterTimeout kills a run at its deadline; the leaf
// is still removed.
func TestCgroupLeafRemovedAfterTimeout(t *testing.T) {
	cg := requireCgroup(t)
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond) // ok-wallclock
	defer cancel()
	r := f.sandboxed(t, ctx, DefaultNative(), f.policy(), "sleep")
	if r.Outcome != TimedOut {
		t.Errorf("outcome %s, want %s", r.Outcome, TimedOut)
	}
	checkCgroupRun(t, f, cg, r)
}

// TestCgroupKillsSurvivors runs without the PID namespace (so without the
// kernel killing the run's processes when its first one exits) and leaves
// a daemon behind: removing the leaf kills it.
func TestCgroupKillsSurvivors(t *testing.T) {
	cg := requireCgroup(t)
	f := newFixture(t)
	p := f.policy()
	p.Without = []Layer{LayerUserNS}
	t.Cleanup(func() { killLeftovers(f.mark) })
	// Positive control: without the cgroup the daemon outlives the run.
	p.Without = append(p.Without, LayerCgroup)
	f.sandboxed(t, context.Background(), DefaultNative(), p, "background", "1000")
	if leftovers(f.mark) == 0 {
		t.Fatal("positive control: the daemon did not outlive a run without PID namespace and cgroup")
	}
	killLeftovers(f.mark)
	p.Without = p.Without[:1]
	r := f.sandboxed(t, context.Background(), DefaultNative(), p, "background", "1000")
	if !strings.HasPrefix(string(r.Stdout), "OK") {
		t.Errorf("the attack failed: %s %q %q", r.Summary(), r.Stdout, trim(r.Stderr))
	}
	checkCgroupRun(t, f, cg, r)
}

func TestProbeReportsCgroup(t *testing.T) {
	cg := requireCgroup(t)
	if !Probe().Has(LayerCgroup) || !strings.Contains(Probe().String(), "cgroup v"+strconv.Itoa(cg.version)) {
		t.Errorf("probe: %s", Probe())
	}
}

func TestFindCgroups(t *testing.T) {
	usable := func(ok ...string) func(string, ...string) error {
		return func(dir string, _ ...string) error {
			for _, d := range ok {
				if d == dir {
					return nil
				}
			}
			return os.ErrPermission
		}
	}
	v1 := `4:memory:/process_api/abc
8:pids:/
0::/
`
	mounts := `30 29 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
35 29 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
37 29 0:33 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	got := findCgroups([]byte(v1), []byte(mounts), usable("/sys/fs/cgroup/memory/process_api/abc", "/sys/fs/cgroup/pids"))
	if got.version != 1 || got.memory != "/sys/fs/cgroup/memory/process_api/abc" || got.pids != "/sys/fs/cgroup/pids" {
		t.Errorf("v1 host: %+v", got)
	}
	// A delegated v2 subtree wins.
	got = findCgroups([]byte("0::/user.slice/agent\n"), []byte("25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"), usable("/sys/fs/cgroup/user.slice/agent"))
	if got.version != 2 || got.parent != "/sys/fs/cgroup/user.slice/agent" {
		t.Errorf("v2 host: %+v", got)
	}
	// A cgroup namespace's root mount, with an escaped space in its path.
	got = findCgroups([]byte("0::/\n"), []byte(`25 1 0:22 / /mnt/my\040cg rw - cgroup2 cgroup2 rw`+"\n"), usable("/mnt/my cg"))
	if got.version != 2 || got.parent != "/mnt/my cg" {
		t.Errorf("escaped mount point: %+v", got)
	}
	// Nothing writable: no cgroup, and the reason.
	got = findCgroups([]byte(v1), []byte(mounts), usable())
	if got.version != 0 || !strings.Contains(got.detail, "RLIMIT_DATA") {
		t.Errorf("read-only host: %+v", got)
	}
}

// TestStaleLeavesRemoved makes the leaf a crashed process would leave, with
// a process still in it, and checks that the next process's scan kills the
// process and removes the leaf.
func TestStaleLeavesRemoved(t *testing.T) {
	cg := requireCgroup(t)
	gone := exec.Command("/bin/true")
	must(t, gone.Run())
	parent := cg.parent
	if cg.version == 1 {
		parent = cg.pids
	}
	stale := filepath.Join(parent, leafPrefix+strconv.Itoa(gone.Process.Pid)+"-1")
	must(t, os.Mkdir(stale, 0o755))
	t.Cleanup(func() { removeLeaf(stale) })
	sleeper := exec.Command("/bin/sleep", "60")
	must(t, sleeper.Start())
	defer sleeper.Wait()
	must(t, os.WriteFile(filepath.Join(stale, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0))
	removeStaleLeaves(parent)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale leaf %s still there: %v", stale, err)
	}
	if !waitFor(func() bool { return processGone(sleeper.Process.Pid) }) {
		sleeper.Process.Kill()
		t.Error("the process in the stale leaf was not killed")
	}
}

// processGone reports whether pid has exited (a zombie counts).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || strings.Contains(string(b), ") Z ")
}

// TestCgroupV2Remove checks the cgroup v2 mechanics this host can show: a
// process moved into a v2 leaf, and the leaf emptied and removed. The
// host's v2 hierarchy delegates no memory or pids controller, so the leaf
// here carries no limits; newLeaf and the counters are the v1 tests'.
func TestCgroupV2Remove(t *testing.T) {
	requireSandbox(t)
	_, lf := scratchV2Leaf(t, "v2test")
	dir := lf.memory
	cmd := exec.Command("/bin/sleep", "60")
	must(t, cmd.Start())
	must(t, lf.enter(cmd.Process.Pid))
	in, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
	if !strings.Contains(string(in), "0::/"+filepath.Base(dir)+"\n") && !strings.Contains(string(in), "/"+filepath.Base(dir)+"\n") {
		t.Errorf("the process is not in the leaf: %q", in)
	}
	// Removing the leaf kills what is in it.
	if err := lf.remove(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		t.Errorf("the process in the leaf was not killed: %v", cmd.ProcessState)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("leaf still there: %v", err)
	}
}

// scratchV2Leaf makes a leaf named after suffix in the host's cgroup v2
// hierarchy, removed when the test ends, and returns the hierarchy and the
// leaf. Without a v2 hierarchy it may write to, the test fails in CI (whose
// host has one) and is skipped elsewhere.
func scratchV2Leaf(t *testing.T, suffix string) (cgroupHost, *leaf) {
	t.Helper()
	fail := t.Skip
	if os.Getenv("CI") == "true" {
		fail = t.Fatal
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	self, _ := os.ReadFile("/proc/self/cgroup")
	v2 := findCgroups(self, mounts, func(string, ...string) error { return nil })
	if v2.version != 2 {
		fail("no cgroup v2 hierarchy mounted")
	}
	dir := filepath.Join(v2.parent, leafPrefix+strconv.Itoa(os.Getpid())+"-"+suffix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		fail(err)
	}
	lf := &leaf{version: 2, memory: dir, pids: dir}
	t.Cleanup(func() { lf.remove() })
	return v2, lf
}
