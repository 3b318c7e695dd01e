package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"github.com/miniopenclaw/tool/sandbox/internal/outcome"
)

// traceSpares returns a native backend with spares (whatever
// CLAWTOOL_SANDBOX_SPARE says), closed when t ends, that records, for each
// of its runs, whether a spare served it. hooks, when given, are the
// backend's other hooks.
func traceSpares(t *testing.T, hooks ...nativeHooks) (*Native, *[]bool) {
	t.Helper()
	var k nativeHooks
	if len(hooks) > 0 {
		k = hooks[0]
	}
	var served []bool
	tracedRuns = nil
	k.trace = func(tr spawnTrace) {
		served = append(served, tr.spare)
		tracedRuns = append(tracedRuns, tr)
	}
	return newTestNative(t, NativeOptions{Spares: DefaultSpares}, &k), &served
}

// tracedRuns are the traces of the runs since traceSpares.
var tracedRuns []spawnTrace

// requireForkMode fails in CI, and skips elsewhere, when the kernel cannot
// give a spare's command a PID namespace with its own /proc (fork mode).
func requireForkMode(t *testing.T) {
	t.Helper()
	requireSandbox(t)
	if Probe().fork {
		return
	}
	const reason = "this kernel's procfs does not take a PID namespace (Linux 6.15): helpers become their commands"
	if os.Getenv("CI") == "true" {
		t.Fatal(reason)
	}
	t.Skip(reason)
}

// TestForkMode runs a command cold, then from a spare: both helpers fork
// it from a single-threaded clone into a PID namespace of its own, where
// it is pid 1 and sees only its own processes in /proc (the waiting
// helper is outside), and its exit status, stopping signal and CPU time
// reach the result through the helper's record.
func TestForkMode(t *testing.T) {
	requireForkMode(t)
	cases := []struct {
		name   string
		p      Policy
		script string
		stdout string
		check  func(*Result) bool
	}{
		// The shell counts /proc's processes itself, with no child
		// running: it alone is there. (ls piped to grep -c counted 2 or 3,
		// as grep was forked before or after ls read /proc.)
		{name: "processes", script: `echo $$; tr '\0' ' ' </proc/1/cmdline; echo; set -- /proc/[0-9]*; echo $#`,
			stdout: "1\nsh -c X \n1\n", check: func(r *Result) bool { return r.Outcome == Exited && r.ExitCode == 0 }},
		// The helper's argv[0] is clawtool-sandbox (startHelper): no
		// process of the command's namespace has it.
		{name: "helper unseen", script: `grep -l 'clawtool-[s]andbox' /proc/[0-9]*/cmdline; echo end`,
			stdout: "end\n", check: func(r *Result) bool { return r.Outcome == Exited && r.ExitCode == 0 }},
		{name: "exit status", script: "exit 3", check: func(r *Result) bool { return r.Outcome == Exited && r.ExitCode == 3 }},
		{name: "cpu limit", p: Policy{Limits: Limits{CPU: time.Second}}, script: "while :; do :; done",
			check: func(r *Result) bool {
				return r.Outcome == CPULimit && r.ExitCode == -1 && r.Signal != "" && r.CPU >= outcome.CPUKillFloor(time.Second)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, _ := traceSpares(t)
			want := strings.Replace(c.stdout, "X", c.script, 1)
			for i := range 2 {
				r, err := runOn(n, context.Background(), c.p, "sh", "-c", c.script)
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				if string(r.Stdout) != want || !c.check(r) {
					t.Errorf("run %d: %s, stdout %q (want %q), cpu %v", i, r.Summary(), r.Stdout, want, r.CPU)
				}
			}
			if len(tracedRuns) != 2 || tracedRuns[0].spare || !tracedRuns[1].spare || !tracedRuns[0].forked || !tracedRuns[1].forked {
				t.Errorf("runs %+v: want both forked, the first cold, the second by a spare", tracedRuns)
			}
		})
	}
}

// TestForkModeProcessLimit holds Limits.Processes to what it promises
// while the helper waits beside the command (fork mode), cold and from a
// spare, under the cgroup's pids.max and under RLIMIT_NPROC: with a limit
// of 4 the shell and three children fit, a fourth child does not; with a
// limit of 1 the command runs and cannot fork. The helper's own threads,
// which both limits count while it waits, are added to them.
func TestForkModeProcessLimit(t *testing.T) {
	requireForkMode(t)
	script := func(children int) string {
		s := "pids="
		for range children {
			s += "; sleep 30 & pids=\"$pids $!\""
		}
		return s + "; kill $pids 2>/dev/null; exit 0"
	}
	for _, limit := range []struct {
		name string
		p    Policy
	}{
		{"cgroup", Policy{}},
		{"rlimit", Policy{Without: []Layer{LayerCgroup}}},
	} {
		for _, c := range []struct{ max, children int }{{4, 3}, {4, 4}, {1, 0}, {1, 1}} {
			p := limit.p
			p.Limits.Processes = c.max
			t.Run(fmt.Sprintf("%s/%d-of-%d", limit.name, c.children, c.max), func(t *testing.T) {
				if limit.name == "cgroup" {
					requireCgroup(t)
				}
				n, _ := traceSpares(t)
				for i := range 2 {
					r, err := runOn(n, context.Background(), p, "sh", "-c", script(c.children))
					if err != nil {
						t.Fatalf("run %d: %v", i, err)
					}
					if fits := c.children < c.max; r.OK() != fits {
						t.Errorf("run %d (spare %v): %s %q; want it to succeed: %v",
							i, tracedRuns[i].spare, r.Summary(), r.Stderr, fits)
					}
				}
				if len(tracedRuns) != 2 || !tracedRuns[0].forked || !tracedRuns[1].forked {
					t.Errorf("runs %+v: want both forked", tracedRuns)
				}
			})
		}
	}
}

// TestExecModeProcessLimit runs commands whose helper becomes them (a
// policy without the mount namespace, whose helper builds no root): the
// helper waits in the run's leaf with room for its threads, whatever
// Processes is, and once the command started the leaf's limit is the
// command's alone. The command first waits to read that limit from the
// leaf (a path it is given), so that its forks come after the run set it.
func TestExecModeProcessLimit(t *testing.T) {
	cg := requireCgroup(t)
	dir := cg.pids
	if cg.version == 2 {
		dir = cg.parent
	}
	for _, c := range []struct{ max, children int }{{1, 0}, {4, 3}, {4, 4}} {
		t.Run(fmt.Sprintf("%d-of-%d", c.children, c.max), func(t *testing.T) {
			n, _ := traceSpares(t)
			for i := range 2 {
				leaf := leafPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(uint64(leafSeq.Load()+1), 10)
				p := Policy{
					Without:  []Layer{LayerMountNS},
					ReadOnly: []string{dir},
					Env:      append(DefaultEnv(), "PIDS_MAX="+filepath.Join(dir, leaf, "pids.max")),
					Limits:   Limits{Processes: c.max},
				}
				script := `n=0; while read x <"$PIDS_MAX" && [ "$x" != ` + strconv.Itoa(c.max) + ` ]; do
					n=$((n+1)); [ $n -lt 100000 ] || { echo "pids.max stays $x" >&2; exit 9; }
				done`
				for range c.children {
					script += "; sleep 30 & pids=\"$pids $!\""
				}
				script += "; kill $pids 2>/dev/null; exit 0"
				r, err := runOn(n, context.Background(), p, "sh", "-c", script)
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				if fits := c.children < c.max; r.OK() != fits {
					t.Errorf("run %d (spare %v): %s %q; want it to succeed: %v", i, tracedRuns[i].spare, r.Summary(), r.Stderr, fits)
				}
			}
			if len(tracedRuns) != 2 || tracedRuns[0].forked || tracedRuns[1].forked || !tracedRuns[1].spare {
				t.Errorf("runs %+v: want neither forked, the second by a spare", tracedRuns)
			}
		})
	}
}

// TestSpareFreshNamespaces runs the same policy three times: the first run
// starts cold, the next two claim spares. Each run's namespaces differ
// from the run before it, a file one run leaves in /tmp is not in the
// next, the standard streams are the run's own, and under a cgroup the
// command is in the run's leaf. Namespace numbers are compared only while
// both namespaces are alive (a freed number comes back): every claim here
// starts the next spare at once, and each run's command waits, reading its
// standard input, until that spare is ready, namespaces made.
func TestSpareFreshNamespaces(t *testing.T) {
	requireSandbox(t)
	ready := make(chan int, 4)
	n, served := traceSpares(t, nativeHooks{eager: true, spareWaiting: func(pid int) { ready <- pid }})
	script := `for n in user mnt pid net ipc uts; do readlink /proc/self/ns/$n; done
ls /tmp/earlier-run 2>/dev/null && echo SEEN
echo x > /tmp/earlier-run
cat
grep -E "$1" /proc/self/cgroup >&2`
	withCgroup := Probe().Has(LayerCgroup)
	pattern := ":(memory|pids):"
	if hostCgroups().version == 2 {
		pattern = "^0::"
	}
	var prev []string
	for i := range 3 {
		cmd := CommandContext(context.Background(), Policy{}, "sh", "-c", script, "sh", pattern)
		cmd.Backend = n
		in := "stdin of run " + strconv.Itoa(i)
		stdin, w := io.Pipe()
		cmd.Stdin = stdin
		type output struct {
			b   []byte
			err error
		}
		done := make(chan output, 1)
		go func() {
			b, err := cmd.Output()
			done <- output{b, err}
		}()
		io.WriteString(w, in)
		select {
		case <-ready: // the spare this run's claim started
		case <-time.After(30 * time.Second): // ok-wallclock: bounds a wait that only fails when no spare comes
			t.Fatalf("run %d: no next spare", i)
		}
		if withCgroup {
			// Seen from here: inside, the run's cgroup namespace is
			// rooted at its leaf, so its own paths are "/" (checked
			// below, and by TestCgroupPathHidden).
			if got := cgroupsOfCommand(t, "earlier-run"); strings.Count(got, leafPrefix) < len(regexp.MustCompile(pattern).FindAllString(got, -1)) || !strings.Contains(got, leafPrefix) {
				t.Errorf("run %d: the command is not in the run's leaf: %q", i, got)
			}
		}
		w.Close()
		o := <-done
		out, err := o.b, o.err
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != 7 || lines[6] != in {
			t.Fatalf("run %d: stdout %q, want 6 namespaces and %q", i, out, in)
		}
		ns := lines[:6]
		for j, n := range ns {
			if prev != nil && n == prev[j] {
				t.Errorf("run %d shares namespace %s with the run before", i, n)
			}
		}
		prev = ns
		if withCgroup {
			stderr := string(cmd.Result.Stderr)
			if strings.Count(stderr, ":/\n") != strings.Count(stderr, "\n") || stderr == "" {
				t.Errorf("run %d: the command's cgroups are not the roots of its cgroup namespace: %q", i, stderr)
			}
		}
	}
	if want := []bool{false, true, true}; !equalBools(*served, want) {
		t.Errorf("served by a spare: %v, want %v", *served, want)
	}
}

// cgroupsOfCommand returns, as this process sees them, the cgroup lines
// (/proc/PID/cgroup) of the processes whose command line holds marker,
// waiting up to 30 s for one to appear.
func cgroupsOfCommand(t *testing.T, marker string) string {
	t.Helper()
	for range 3000 {
		var out strings.Builder
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			if _, err := strconv.Atoi(d.Name()); err != nil {
				continue
			}
			cmdline, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
			if err != nil || !strings.Contains(string(cmdline), marker) || d.Name() == strconv.Itoa(os.Getpid()) {
				continue
			}
			if b, err := os.ReadFile("/proc/" + d.Name() + "/cgroup"); err == nil {
				out.Write(b)
			}
		}
		if out.Len() > 0 {
			return out.String()
		}
		time.Sleep(10 * time.Millisecond) // ok-wallclock: bounds a wait that only fails when the command never starts
	}
	t.Fatalf("no process with %q in its command line", marker)
	return ""
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSpareKilledFromOutside kills the waiting spare: the next run finds
// it dead, starts cold and succeeds; the run after claims a new spare.
func TestSpareKilledFromOutside(t *testing.T) {
	requireSandbox(t)
	n, served := traceSpares(t)
	for i := range 3 {
		if i == 1 {
			var pid int
			if !waitFor(func() bool { pid = n.waitingSpare(); return pid != 0 }) { // ok-wallclock: waitFor polls for at most 30 s
				t.Fatal("no spare after the first run")
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		r, err := runOn(n, context.Background(), Policy{}, "sh", "-c", "echo ok")
		if err != nil || !r.OK() || string(r.Stdout) != "ok\n" {
			t.Fatalf("run %d: %v %+v", i, err, r)
		}
	}
	if want := []bool{false, false, true}; !equalBools(*served, want) {
		t.Errorf("served by a spare: %v, want %v", *served, want)
	}
}

// TestSpareIdleReaped gives a backend a short idle time
// (NativeOptions.Idle): the spare the run armed is killed and reaped, and
// a run after it still works.
func TestSpareIdleReaped(t *testing.T) {
	requireSandbox(t)
	started := make(chan int, 1)
	n := newTestNative(t, NativeOptions{Spares: DefaultSpares, Idle: 20 * time.Millisecond}, &nativeHooks{spareWaiting: func(pid int) {
		select {
		case started <- pid:
		default:
		}
	}})
	if _, err := runOn(n, context.Background(), Policy{}, "true"); err != nil {
		t.Fatal(err)
	}
	var pid int
	select {
	case pid = <-started:
	case <-time.After(30 * time.Second): // ok-wallclock
		t.Fatal("no spare after the first run")
	}
	// Reaped: no longer in /proc at all, not even as a zombie.
	gone := func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		return n.waitingSpare() == 0 && os.IsNotExist(err)
	}
	if !waitFor(gone) { // ok-wallclock: waitFor polls for at most 30 s
		t.Fatalf("the idle spare %d was not reaped", pid)
	}
	// A run after the reap works: cold, or from a spare the first run
	// started when it ended, if it ended after the reap.
	if _, err := runOn(n, context.Background(), Policy{}, "true"); err != nil {
		t.Fatal(err)
	}
}

// TestSparesOff runs a shape twice on a backend that keeps no spares, on
// the zero Native, and on a backend with spares closed between the runs:
// every run starts cold and no spare waits after them. The control, a
// backend with spares left open, serves the second run from a spare.
func TestSparesOff(t *testing.T) {
	requireSandbox(t)
	for _, c := range []struct {
		name   string
		opts   NativeOptions
		zero   bool // the zero Native, not NewNative(opts)
		closed bool // closed after the first run
		want   []bool
	}{
		{name: "no spares", want: []bool{false, false}},
		{name: "zero value", zero: true, want: []bool{false, false}},
		{name: "closed", opts: NativeOptions{Spares: DefaultSpares}, closed: true, want: []bool{false, false}},
		{name: "control", opts: NativeOptions{Spares: DefaultSpares}, want: []bool{false, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var served []bool
			k := &nativeHooks{trace: func(tr spawnTrace) { served = append(served, tr.spare) }}
			var n *Native
			if c.zero {
				n = &Native{}
				n.pool.hooks = k
				t.Cleanup(func() { n.Close() })
			} else {
				n = newTestNative(t, c.opts, k)
			}
			for i := range 2 {
				if i == 1 && c.closed {
					n.Close()
				}
				if _, err := runOn(n, context.Background(), Policy{}, "true"); err != nil {
					t.Fatal(err)
				}
			}
			if !equalBools(served, c.want) {
				t.Errorf("served by a spare: %v, want %v", served, c.want)
			}
			n.settle()
			if pid := n.waitingSpare(); pid != 0 && !c.want[1] {
				t.Errorf("spare %d waits", pid)
			}
		})
	}
}

// TestSpareShapes checks that a run only claims a spare of its own shape:
// another network, another user, and a command reading a pipe rather
// than /dev/null each start cold; at most NativeOptions.Spares shapes
// keep one.
func TestSpareShapes(t *testing.T) {
	requireSandbox(t)
	n, served := traceSpares(t)
	shapes := []struct {
		p     Policy
		stdin bool
	}{
		{Policy{}, false},
		{Policy{Network: NetworkHost}, false},
		{Policy{UID: DefaultUID - 1}, false},
		{Policy{}, true},
		{Policy{Without: []Layer{LayerUserNS}}, false},
	}
	run := func(i int) {
		var stdin *strings.Reader
		if shapes[i].stdin {
			stdin = strings.NewReader("in")
		}
		cmd := CommandContext(context.Background(), shapes[i].p, "cat")
		cmd.Backend = n
		if stdin != nil {
			cmd.Stdin = stdin
		}
		out, err := cmd.Output()
		if err != nil || string(out) != map[bool]string{false: "", true: "in"}[shapes[i].stdin] {
			t.Fatalf("shape %d: %q %v", i, out, err)
		}
	}
	for i := range shapes {
		run(i)
	}
	if got := n.spareShapes(); got != DefaultSpares {
		t.Errorf("%d shapes keep a spare, want %d", got, DefaultSpares)
	}
	// The most recent shapes claim theirs; the first was evicted.
	for _, i := range []int{4, 3, 0} {
		run(i)
	}
	want := []bool{false, false, false, false, false, true, true, false}
	if !equalBools(*served, want) {
		t.Errorf("served by a spare: %v, want %v", *served, want)
	}
}

// TestLeafEnterV2 moves a running process into a cgroup v2 leaf, as a
// claim does with a spare, on the v2 hierarchy this host has.
func TestLeafEnterV2(t *testing.T) {
	requireSandbox(t)
	_, lf := scratchV2Leaf(t, "v2enter")
	dir := lf.memory
	cmd := exec.Command("/bin/sleep", "60")
	must(t, cmd.Start())
	defer cmd.Wait()
	defer cmd.Process.Kill()
	must(t, lf.enter(cmd.Process.Pid))
	in, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
	if !strings.Contains(string(in), "/"+filepath.Base(dir)+"\n") {
		t.Errorf("the process is not in the leaf: %q", in)
	}
	// A process that is gone cannot be moved: the claim falls back.
	cmd.Process.Kill()
	cmd.Wait()
	if err := lf.enter(cmd.Process.Pid); err == nil {
		t.Error("moving a reaped process succeeded")
	}
}

// TestSpareOutcomes runs each case twice, cold and then from a spare, and
// checks that both end the same way: the output cap kills the run, the
// context's deadline kills it, a failing exit keeps its status and
// streams, and a setup failure is an error.
func TestSpareOutcomes(t *testing.T) {
	requireSandbox(t)
	cases := []struct {
		name    string
		p       Policy
		timeout time.Duration
		argv    []string
		want    Outcome
		stdout  string
		errText string
	}{
		{name: "output limit", p: Policy{Limits: Limits{Output: 1000}}, argv: []string{"sh", "-c", "yes"}, want: OutputLimit},
		{name: "timed out", timeout: 300 * time.Millisecond, argv: []string{"sleep", "30"}, want: TimedOut}, // ok-wallclock
		{name: "exit status", argv: []string{"sh", "-c", "echo out; echo err >&2; exit 7"}, want: Exited, stdout: "out\n"},
		{name: "not found", argv: []string{"no-such-command-clawtool"}, errText: errNotFound},
		// The command's execve fails: the helper's child reports its error
		// (in fork mode a child sharing the helper's memory on amd64).
		{name: "not executable", argv: []string{"/etc/passwd"}, errText: "exec /etc/passwd: permission denied"},
		// The command starts with no signal blocked: the helper blocks
		// them all across its clone and its child unblocks them.
		{name: "signal mask", argv: []string{"grep", "^SigBlk:", "/proc/self/status"}, want: Exited, stdout: "SigBlk:\t0000000000000000\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, served := traceSpares(t)
			for i := range 2 {
				ctx := context.Background()
				if c.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.timeout)
					defer cancel()
				}
				r, err := runOn(n, ctx, c.p, c.argv...)
				if c.errText != "" {
					if err == nil || !strings.Contains(err.Error(), c.errText) {
						t.Fatalf("run %d: %v, want an error with %q", i, err, c.errText)
					}
					continue
				}
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				if r.Outcome != c.want || string(r.Stdout) != c.stdout && c.stdout != "" {
					t.Errorf("run %d: %s, stdout %q; want %s %q", i, r.Summary(), r.Stdout, c.want, c.stdout)
				}
				if c.want == OutputLimit && (!r.Truncated || len(r.Stdout) != 1000) {
					t.Errorf("run %d: truncated %v with %d bytes, want 1000", i, r.Truncated, len(r.Stdout))
				}
				if c.name == "exit status" && (r.ExitCode != 7 || string(r.Stderr) != "err\n") {
					t.Errorf("run %d: exit %d stderr %q", i, r.ExitCode, r.Stderr)
				}
			}
			if want := []bool{false, true}; !equalBools(*served, want) {
				t.Errorf("served by a spare: %v, want %v", *served, want)
			}
		})
	}
}

// blockedInConfigRead waits until process pid is in a read of the helper's
// configuration descriptor, which a spare reaches only after it prepared
// its root, and reports whether it got there.
func blockedInConfigRead(pid int) bool {
	want := "0 0x" + strconv.FormatInt(helper.ConfigFD, 16) + " " // read(ConfigFD, ...)
	for range 5000 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/syscall")
		if err != nil {
			return false
		}
		if strings.HasPrefix(string(b), want) {
			return true
		}
		time.Sleep(time.Millisecond) // ok-wallclock: bounds a wait that only fails when the spare never gets there
	}
	return false
}

// TestSpareRootPreparedBeforeClaim checks that a spare builds the part of
// the root no policy changes before it is claimed, so that the run that
// claims it only adds its own mounts: the helper's "prepare" timestamp is
// earlier than the claim. Inside, nothing of the staging remains: the
// helper's copy of the host tree (which is not read-only) was detached
// with the old root.
func TestSpareRootPreparedBeforeClaim(t *testing.T) {
	requireSandbox(t)
	var traces []spawnTrace
	n := newTestNative(t, NativeOptions{Spares: DefaultSpares}, &nativeHooks{trace: func(tr spawnTrace) { traces = append(traces, tr) }})
	p := Policy{} // no workspace, so that /tmp holds no mount point for it
	script := `grep -c -e sandbox-host -e sandbox-root /proc/self/mountinfo; ls -a /tmp`
	for i := range 2 {
		if i == 1 {
			// The first run started the next spare in the background as it
			// ended: wait until that start is over (on a busy machine it may
			// not be when Run returns).
			n.settle()
			pid := n.waitingSpare()
			if pid == 0 || !blockedInConfigRead(pid) {
				t.Fatalf("no spare waiting for its configuration (pid %d)", pid)
			}
		}
		r, err := runOn(n, context.Background(), p, "sh", "-c", script)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := string(r.Stdout); got != "0\n.\n..\n" {
			t.Errorf("run %d: staging mounts seen, or /tmp not empty: %q", i, got)
		}
	}
	if len(traces) != 2 || traces[0].spare || !traces[1].spare {
		t.Fatalf("traces %+v, want a cold run then a spare's", traces)
	}
	stages := helper.Stages
	for _, tr := range traces {
		want := stages
		if tr.forked {
			want = append(slices.Clip(stages), helper.ForkStages...)
		}
		if len(tr.helper) != len(want) {
			t.Fatalf("%d timestamps, want %d (%v)", len(tr.helper), len(want), want)
		}
	}
	prepared := traces[1].helper[slices.Index(stages, "prepare")]
	if claim := traces[1].claim; prepared >= claim {
		t.Errorf("the spare prepared its root %v after the claim", time.Duration(prepared-claim))
	}
}

// TestPolicyPathsThroughSymlinks binds a workspace and a read-only path
// named through absolute symbolic links into the host's /tmp, which the
// helper's staging covers by the time the policy arrives: they are looked
// up in the host's tree as it was, cold and from a spare.
func TestPolicyPathsThroughSymlinks(t *testing.T) {
	requireSandbox(t)
	n, served := traceSpares(t)
	dir := reachableDir(t)
	for _, d := range []string{"ws", "ro"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, d), filepath.Join(dir, d+"-link")); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "ws"), 0o777) // the sandbox user writes there
	if err := os.WriteFile(filepath.Join(dir, "ro", "f"), []byte("read-only data"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Policy{Workspace: filepath.Join(dir, "ws-link"), ReadOnly: []string{filepath.Join(dir, "ro-link")}}
	for i := range 2 {
		name := "out" + strconv.Itoa(i)
		r, err := runOn(n, context.Background(), p, "sh", "-c", `cat "$1/f" && echo run > `+name+` && ! echo x > "$1/g"`, "sh", p.ReadOnly[0])
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if !r.OK() || string(r.Stdout) != "read-only data" {
			t.Errorf("run %d: %s, stdout %q stderr %q", i, r.Summary(), r.Stdout, r.Stderr)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "ws", name)); err != nil || string(b) != "run\n" {
			t.Errorf("run %d: the workspace file on the host: %q, %v", i, b, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "ro", "g")); err == nil {
			t.Errorf("run %d wrote into the read-only path", i)
		}
	}
	if want := []bool{false, true}; !equalBools(*served, want) {
		t.Errorf("served by a spare: %v, want %v", *served, want)
	}
}

// reachableDir returns a new temporary directory that the sandbox user
// can reach and list.
func reachableDir(t *testing.T) string {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
