package sandbox

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// children lists the process ids of this process's children, zombies
// (ended, not reaped) included.
func children() []int {
	var pids []int
	me := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == me {
			pid, _ := strconv.Atoi(e.Name())
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestNativeCloseLeavesNothing runs a mix of shapes concurrently on a
// backend with fewer spare slots than shapes (so spares are evicted), in
// fork mode and exec mode, with and without a cgroup leaf, with commands
// that leave a background process behind, and closes the backend as soon
// as the last run returned, while the spares those runs started are still
// starting. After Close nothing of the backend is left: no helper (not
// even a zombie), no process of a command, no cgroup leaf, no goroutine.
// A run after Close works, starts cold, and a second Close waits for its
// background reap too.
//
// The control is the same check before Close: the backend's spares are
// then this process's children.
func TestNativeCloseLeavesNothing(t *testing.T) {
	requireSandbox(t)
	// What other tests left with the default backend (its idle spares) is
	// not this backend's: settle it and take its children as they are.
	DefaultNative().settle()
	before := children()
	goroutines := goleak.IgnoreCurrent()
	mark := testMark() + "-close"
	env := append(DefaultEnv(), markEnv+"="+mark)

	var served []bool
	var mu sync.Mutex
	n := NewNative(NativeOptions{Spares: 2})
	n.pool.hooks = &nativeHooks{trace: func(tr spawnTrace) {
		mu.Lock()
		served = append(served, tr.spare)
		mu.Unlock()
	}}
	defer n.Close()
	shapes := []struct {
		p     Policy
		stdin bool
	}{
		{p: Policy{}},
		{p: Policy{Without: []Layer{LayerCgroup}}},
		{p: Policy{Without: []Layer{LayerMountNS}}},
		{p: Policy{}, stdin: true},
	}
	withCgroup := Probe().Has(LayerCgroup)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 3 {
		wg.Go(func() {
			for i := range 2 * len(shapes) {
				s := shapes[(i+w)%len(shapes)]
				p := s.p
				p.Env = env
				var stdin *strings.Reader
				if s.stdin {
					stdin = strings.NewReader("in")
				}
				cmd := CommandContext(context.Background(), p, "sh", "-c", "sleep 30 >/dev/null 2>&1 & cat >/dev/null; echo ok")
				cmd.Backend = n
				if stdin != nil {
					cmd.Stdin = stdin
				}
				out, err := cmd.Output()
				if err != nil || string(out) != "ok\n" {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("run: %v", err)
	}
	mu.Lock()
	spared := slices.Contains(served, true)
	mu.Unlock()
	if !spared {
		t.Errorf("no run was served by a spare (%v): the check below would see no spare", served)
	}
	n.settle()
	if n.waitingSpare() == 0 {
		t.Error("control: no spare waits before Close")
	}

	check := func(when string) {
		t.Helper()
		for _, pid := range children() {
			if !slices.Contains(before, pid) {
				stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				t.Errorf("%s: child %d left: %s", when, pid, stat)
			}
		}
		if n := leftovers(mark); n > 0 {
			killLeftovers(mark)
			t.Errorf("%s: %d processes of the commands left", when, n)
		}
		if withCgroup {
			if l := leaves(hostCgroups()); len(l) > 0 {
				t.Errorf("%s: cgroup leaves left: %v", when, l)
			}
		}
		if err := goleak.Find(goroutines); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	n.Close()
	check("after Close")

	mu.Lock()
	served = nil
	mu.Unlock()
	for _, p := range []Policy{{Env: env}, {Env: env, Without: []Layer{LayerCgroup}}} {
		if r, err := runOn(n, context.Background(), p, "sh", "-c", "sleep 30 >/dev/null 2>&1 & echo ok"); err != nil || !r.OK() {
			t.Fatalf("run after Close: %v %+v", err, r)
		}
	}
	n.Close()
	check("after a run and a second Close")
	if slices.Contains(served, true) || n.waitingSpare() != 0 {
		t.Errorf("after Close: runs served by spares %v, spare waiting %d", served, n.waitingSpare())
	}
}

// TestNativesIndependent: two backends keep spares of their own. Closing
// one reaps its spares only: the other's spare still waits, the same
// process, and serves the other's next run, while the closed one's next
// run starts cold.
func TestNativesIndependent(t *testing.T) {
	requireSandbox(t)
	a, servedA := traceSpares(t)
	var servedB []bool
	b := newTestNative(t, NativeOptions{Spares: DefaultSpares}, &nativeHooks{trace: func(tr spawnTrace) { servedB = append(servedB, tr.spare) }})
	p := Policy{}
	for _, n := range []*Native{a, b} {
		if _, err := runOn(n, context.Background(), p, "true"); err != nil {
			t.Fatal(err)
		}
		n.settle()
	}
	spareA, spareB := a.waitingSpare(), b.waitingSpare()
	if spareA == 0 || spareB == 0 || spareA == spareB {
		t.Fatalf("spares %d and %d, want one of each backend's", spareA, spareB)
	}
	a.Close()
	if _, err := os.Stat("/proc/" + strconv.Itoa(spareA)); !os.IsNotExist(err) {
		t.Errorf("the closed backend's spare %d is still there", spareA)
	}
	if got := b.waitingSpare(); got != spareB {
		t.Errorf("the other backend's spare is %d, want %d still waiting", got, spareB)
	}
	for _, n := range []*Native{a, b} {
		if r, err := runOn(n, context.Background(), p, "sh", "-c", "echo ok"); err != nil || string(r.Stdout) != "ok\n" {
			t.Fatalf("run after closing a: %v %+v", err, r)
		}
	}
	if want := []bool{false, false}; !equalBools(*servedA, want) {
		t.Errorf("closed backend: served by a spare %v, want %v", *servedA, want)
	}
	if want := []bool{false, true}; !equalBools(servedB, want) {
		t.Errorf("open backend: served by a spare %v, want %v", servedB, want)
	}
}
