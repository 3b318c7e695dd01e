package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"golang.org/x/sys/unix"
)

// forkerPid returns the process id of n's forker, or 0.
func (n *Native) forkerPid() int { return n.pool.fk.pid() }

// forEachForker runs f as a subtest for each configuration whose helpers
// a forker starts: the default (NativeOptions.Helper empty: the forker and
// the helpers are this program re-executed, here the test binary) and a
// helper program of its own (built from this tree). program is what
// NativeOptions.Helper says.
func forEachForker(t *testing.T, f func(t *testing.T, program string)) {
	requireSandbox(t)
	configs := []struct{ name, program string }{{"default", ""}, {"helper-program", BuildHelperProgram(t, "")}}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) { f(t, c.program) })
	}
}

// A backend, with a helper program or without, starts its helpers from
// the forker, a child of its own; the helpers are this process's children
// all the same (the run reaps them and reports their exit). The control
// is the same backend told to start helpers itself: no forker.
func TestForkerStartsHelpers(t *testing.T) {
	forEachForker(t, testForkerStartsHelpers)
}

func testForkerStartsHelpers(t *testing.T, program string) {
	ctx := context.Background()
	for _, direct := range []bool{false, true} {
		for _, spares := range []int{0, 1} {
			t.Run(fmt.Sprintf("direct=%v/spares=%d", direct, spares), func(t *testing.T) {
				n := newTestNative(t, NativeOptions{Helper: program, Spares: spares}, &nativeHooks{directStart: direct})
				for i := range 3 {
					r, err := runOn(n, ctx, Policy{}, "sh", "-c", "echo ok; exit 3")
					if err != nil || r.ExitCode != 3 || string(r.Stdout) != "ok\n" {
						t.Fatalf("run %d: %v %+v", i, err, r)
					}
				}
				if got := n.forkerPid() != 0; got == direct {
					t.Fatalf("forker running = %v; want %v", got, !direct)
				}
				pid := n.forkerPid()
				n.Close()
				if pid != 0 && isChild(pid) {
					t.Fatalf("the forker %d is still a child after Close", pid)
				}
			})
		}
	}
}

// A forker killed between runs is replaced at the next run, which works;
// the killed one is reaped. With spares, the spares it started are this
// process's children and still serve.
func TestForkerKilledBetweenRuns(t *testing.T) {
	forEachForker(t, testForkerKilledBetweenRuns)
}

func testForkerKilledBetweenRuns(t *testing.T, program string) {
	ctx := context.Background()
	for _, spares := range []int{0, 1} {
		t.Run(fmt.Sprintf("spares=%d", spares), func(t *testing.T) {
			n := newTestNative(t, NativeOptions{Helper: program, Spares: spares}, nil)
			for i := range 3 {
				before := n.forkerPid()
				if i > 0 {
					if before == 0 {
						t.Fatal("no forker after a run")
					}
					syscall.Kill(before, syscall.SIGKILL)
					if !waitFor(func() bool { return exited(before) }) {
						t.Fatal("the forker did not die")
					}
				}
				r, err := runOn(n, ctx, Policy{}, "echo", "ok")
				if err != nil || !r.OK() || string(r.Stdout) != "ok\n" {
					t.Fatalf("run %d after the forker was killed: %v %+v", i, err, r)
				}
				n.settle()
				if i > 0 && isChild(before) {
					t.Fatalf("the killed forker %d was not reaped", before)
				}
			}
		})
	}
}

// A forker killed while a run it started is under way does not touch the
// run: the helper is this process's child, confined by its own setup. The
// run ends as it would have; the next run starts a new forker.
func TestForkerKilledMidRun(t *testing.T) {
	forEachForker(t, testForkerKilledMidRun)
}

func testForkerKilledMidRun(t *testing.T, program string) {
	n := newTestNative(t, NativeOptions{Helper: program}, nil)
	mark := testMark() + "-forkermid"
	p := Policy{Env: append(DefaultEnv(), markEnv+"="+mark)}
	in, inW := io.Pipe()
	type result struct {
		r   *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := n.Run(context.Background(), p, []string{"sh", "-c", "read x; echo got $x"}, in)
		done <- result{r, err}
	}()
	if !waitFor(func() bool { return len(marked(mark)) > 0 }) {
		inW.Close()
		<-done
		t.Fatal("the command never started")
	}
	fk := n.forkerPid()
	if fk == 0 {
		t.Fatal("no forker while a run is under way")
	}
	syscall.Kill(fk, syscall.SIGKILL)
	if !waitFor(func() bool { return exited(fk) }) {
		t.Fatal("the forker did not die")
	}
	inW.Write([]byte("x\n"))
	inW.Close()
	res := <-done
	if res.err != nil || !res.r.OK() || string(res.r.Stdout) != "got x\n" {
		t.Fatalf("the run under way when its forker died: %v %+v", res.err, res.r)
	}
	r, err := runOn(n, context.Background(), Policy{}, "echo", "ok")
	if err != nil || !r.OK() || n.forkerPid() == fk || n.forkerPid() == 0 {
		t.Fatalf("the run after: %v %+v (forker %d, was %d)", err, r, n.forkerPid(), fk)
	}
}

// Cancelling a run started by the forker kills the whole tree of its
// command, background processes included, and leaves no process behind.
// The control is the tree seen alive before the cancel.
func TestForkerCancelKillsTree(t *testing.T) {
	forEachForker(t, testForkerCancelKillsTree)
}

func testForkerCancelKillsTree(t *testing.T, program string) {
	for _, spares := range []int{0, 1} {
		t.Run(fmt.Sprintf("spares=%d", spares), func(t *testing.T) {
			n := newTestNative(t, NativeOptions{Helper: program, Spares: spares}, nil)
			runOn(n, context.Background(), Policy{}, "true") // the spare, if any, for the next
			n.settle()
			mark := fmt.Sprintf("%s-forkercancel%d", testMark(), spares)
			p := Policy{Env: append(DefaultEnv(), markEnv+"="+mark)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				r, err := n.Run(ctx, p, []string{"sh", "-c", "sleep 1000 & sleep 1000 & sleep 1000"}, nil)
				if err == nil && r.Outcome != TimedOut {
					err = fmt.Errorf("outcome %v, want %v", r.Outcome, TimedOut)
				}
				done <- err
			}()
			if !waitFor(func() bool { return len(marked(mark)) >= 3 }) {
				cancel()
				<-done
				t.Fatalf("the command's tree never started: %v", marked(mark))
			}
			if n.forkerPid() == 0 {
				t.Fatal("no forker: the run was not started by one")
			}
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			n.settle()
			if left := marked(mark); len(left) > 0 {
				killLeftovers(mark)
				t.Fatalf("processes of the cancelled run left: %v", left)
			}
		})
	}
}

// After Close, nothing of a backend with a forker is left: neither the
// forker nor a helper (no child of this process that was not one before),
// nor a process of a command. The runs come concurrently, in more shapes
// than the backend keeps spares for, one of them without a user
// namespace (started without the forker), each leaving a process behind.
func TestForkerCloseLeavesNothing(t *testing.T) {
	forEachForker(t, testForkerCloseLeavesNothing)
}

func testForkerCloseLeavesNothing(t *testing.T, program string) {
	DefaultNative().settle()
	before := children()
	n := NewNative(NativeOptions{Helper: program, Spares: 2})
	mark := testMark() + "-forkerclose"
	p := Policy{Env: append(DefaultEnv(), markEnv+"="+mark)}
	shapes := []Policy{p, {Env: p.Env, Without: []Layer{LayerCgroup}}, {Env: p.Env, Network: NetworkHost}, {Env: p.Env, Without: []Layer{LayerUserNS}}}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 3 {
		wg.Go(func() {
			for i := range 2 * len(shapes) {
				r, err := runOn(n, context.Background(), shapes[(i+w)%len(shapes)], "sh", "-c", "sleep 30 >/dev/null 2>&1 & echo ok")
				if err != nil || !r.OK() || string(r.Stdout) != "ok\n" {
					errs <- fmt.Errorf("%v %+v", err, r)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n.forkerPid() == 0 {
		t.Fatal("control: no forker")
	}
	if extra := newChildren(before); len(extra) == 0 {
		t.Fatal("control: the backend has no child before Close (no forker, no spare)")
	}
	n.Close()
	if extra := newChildren(before); len(extra) > 0 {
		t.Fatalf("children left after Close: %v", extra)
	}
	if !waitFor(func() bool { return len(marked(mark)) == 0 }) {
		killLeftovers(mark)
		t.Fatal("a command's process outlived Close")
	}
}

func newChildren(before []int) []int {
	var extra []int
	for _, pid := range children() {
		if !slices.Contains(before, pid) {
			extra = append(extra, pid)
		}
	}
	return extra
}

// fakeForker writes a shell script that greets as a forker of this
// package's protocol would, then behaves as body says.
func fakeForker(t *testing.T, greet, body string) string {
	dir, err := os.MkdirTemp("", "clawtool-fakeforker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	script := "#!/bin/sh\n" + greet + "\n" + body + "\n"
	path := dir + "/forker"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// A forker that fails, in every way it can, fails the run with the reason
// and never runs its command; it is killed and reaped, and the next run
// starts another. The control is the real forker in the same table.
//
// In the default configuration the forker is this program and cannot be
// from other sources, nor a fake: the rows set the forker's program
// alone, the helpers staying this program's, to hold the checks all the
// same.
func TestForkerFailsClosed(t *testing.T) {
	requireSandbox(t)
	stale := BuildHelperProgram(t, "-X github.com/miniopenclaw/tool/sandbox/internal/helper.protocol=0123456789abcdef")
	forEachForker(t, func(t *testing.T, program string) { testForkerFailsClosed(t, program, stale) })
}

func testForkerFailsClosed(t *testing.T, program, stale string) {
	greet := "printf 'H%s' '" + helper.Protocol() + "' >&3"
	read := "dd bs=1024 count=1 <&3 >/dev/null 2>&1"
	// program "" in a row: the configuration's own forker.
	for _, tt := range []struct {
		name, program, want string
	}{
		{"the real forker (control)", "", ""},
		{"built from other sources", stale, "built from other sources"},
		{"no greeting", fakeForker(t, "", "exit 0"), "forker"},
		{"another protocol's greeting", fakeForker(t, "printf 'Hnot-this-one' >&3", "sleep 1000"), "built from other sources"},
		{"dies at the request", fakeForker(t, greet, read+"; exit 1"), "forker failed"},
		{"answers garbage", fakeForker(t, greet, read+"; printf 'X' >&3; sleep 1000"), "other than its protocol"},
		{"answers a process not ours", fakeForker(t, greet, read+`; printf 'P\001\000\000\000' >&3; sleep 1000`), "not a helper of this program's"},
		{"answers too much", fakeForker(t, greet, read+"; head -c 4096 /dev/zero | tr '\\0' P >&3; sleep 1000"), "too large"},
		{"never answers", fakeForker(t, greet, read+"; sleep 1000"), "timeout"},
		{"refuses", fakeForker(t, greet, `while [ "$(dd bs=1024 count=1 <&3 2>/dev/null | head -c 1)" = C ]; do printf 'Eno' >&3; done`), "the forker refused: no"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := children()
			mark := testMark() + "-fakeforker"
			o := NativeOptions{Helper: program}
			if tt.program == stale && program != "" {
				// A stale helper program, as the backend's helper and
				// forker.
				o.Helper = stale
			}
			n := newTestNative(t, o, nil)
			if tt.program != "" && tt.program != o.Helper {
				// The forker alone is this row's; every helper it would
				// start is the configuration's (never, here).
				n.pool.fk.program = tt.program
			}
			n.pool.fk.timeout = time.Second
			for i := range 2 {
				r, err := runOn(n, context.Background(), Policy{Env: append(DefaultEnv(), markEnv+"="+mark)}, "echo", "ran")
				if tt.want == "" {
					if err != nil || !r.OK() {
						t.Fatalf("run %d: %v %+v", i, err, r)
					}
					continue
				}
				if err == nil {
					t.Fatalf("run %d ran: %+v", i, r)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("run %d: %v; want %q", i, err, tt.want)
				}
				if fk := n.forkerPid(); fk != 0 && tt.name != "refuses" {
					t.Fatalf("run %d: the failed forker %d still runs", i, fk)
				}
			}
			n.Close()
			if extra := newChildren(before); len(extra) > 0 {
				t.Fatalf("children left: %v", extra)
			}
			if left := marked(mark); len(left) > 0 {
				killLeftovers(mark)
				t.Fatalf("a command ran: %v", left)
			}
		})
	}
}

// The forker refuses a forged, malformed or oversized request, or one
// whose descriptors are not the ones it names, starting nothing and
// keeping none of the descriptors; it then still serves a good request
// (the control).
func TestForkerForgedRequests(t *testing.T) {
	forEachForker(t, testForkerForgedRequests)
}

func testForkerForgedRequests(t *testing.T, program string) {
	f := &forker{program: program, timeout: 10 * time.Second}
	defer f.close()
	f.mu.Lock()
	if err := f.launchLocked(); err != nil {
		f.mu.Unlock()
		t.Fatal(err)
	}
	f.mu.Unlock()
	good := helper.ForkRequest{Flags: uint64(namespaceFlags(NetworkNone)), UID: DefaultUID, GID: DefaultUID, Bits: helper.ForkSetgroups}
	pipes := func(n int) []int {
		var fds []int
		for range (n + 1) / 2 {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			fds = append(fds, p[:]...)
		}
		t.Cleanup(func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		})
		return fds[:n]
	}
	with := func(mod func(*helper.ForkRequest)) []byte {
		r := good
		mod(&r)
		return r.Encode()
	}
	enc := good.Encode()
	otherProto := slices.Clone(enc)
	otherProto[len(otherProto)-1] ^= 1
	for _, tt := range []struct {
		name  string
		msg   []byte
		files int
		want  string
	}{
		{"empty with descriptors", []byte{}, 4, "malformed"},
		{"short", enc[:10], 4, "malformed"},
		{"wrong magic", append([]byte("XXXX"), enc[4:]...), 4, "malformed"},
		{"another protocol", otherProto, 4, "built from other sources"},
		{"oversized", append(slices.Clone(enc), make([]byte, 4*helper.MaxForkRequest)...), 4, "too large"},
		{"no user namespace", with(func(r *helper.ForkRequest) { r.Flags &^= unix.CLONE_NEWUSER }), 4, "clone flags"},
		{"no PID namespace", with(func(r *helper.ForkRequest) { r.Flags &^= unix.CLONE_NEWPID }), 4, "clone flags"},
		{"shared memory", with(func(r *helper.ForkRequest) { r.Flags |= unix.CLONE_VM }), 4, "clone flags"},
		{"host root", with(func(r *helper.ForkRequest) { r.UID = 0 }), 4, "host's root"},
		{"host root group", with(func(r *helper.ForkRequest) { r.GID = 0 }), 4, "host's root"},
		{"fork without a root", with(func(r *helper.ForkRequest) { r.Bits |= helper.ForkFork }), 4, "fork mode without a root"},
		{"unknown bits", with(func(r *helper.ForkRequest) { r.Bits |= 0x80 }), 4, "unknown"},
		{"too few descriptors", enc, 3, "descriptors"},
		{"too many descriptors", enc, 5, "descriptors"},
		{"no descriptors", enc, 0, "descriptors"},
		{"far too many descriptors", enc, 64, "too large"},
		{"the good request (control)", enc, 4, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fds := pipes(tt.files)
			before := children()
			open0 := openFDs(t, f.pid())
			var oob []byte
			if len(fds) > 0 {
				oob = unix.UnixRights(fds...)
			}
			f.mu.Lock()
			reply, err := f.askLocked(tt.msg, oob)
			f.mu.Unlock()
			if err != nil {
				t.Fatalf("the forker did not answer: %v", err)
			}
			if tt.want == "" {
				if reply[0] != helper.ForkStarted || len(reply) != 5 {
					t.Fatalf("control: %q", reply)
				}
				pid := int(uint32(reply[1]) | uint32(reply[2])<<8 | uint32(reply[3])<<16 | uint32(reply[4])<<24)
				if !isChild(pid) {
					t.Fatalf("control: the helper %d is not this process's child", pid)
				}
				for _, fd := range fds {
					unix.Close(fd) // the helper reads no configuration and exits
				}
				p, _ := os.FindProcess(pid)
				p.Kill()
				p.Wait()
				return
			}
			if reply[0] != helper.ForkRefused || !strings.Contains(string(reply), tt.want) {
				t.Fatalf("answer %q; want a refusal saying %q", reply, tt.want)
			}
			if extra := newChildren(before); len(extra) > 0 {
				t.Fatalf("the refused request started %v", extra)
			}
			if got := openFDs(t, f.pid()); got != open0 {
				t.Fatalf("the forker holds %d descriptors, %d before the request", got, open0)
			}
		})
	}
}

// openFDs counts the open descriptors of process pid.
func openFDs(t *testing.T, pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// A supervisor killed with SIGKILL (no Close, no deferred call) takes its
// forker with it (the forker's parent death signal), and the helpers the
// forker started (their parent is the supervisor): an idle spare and a
// running command. The supervisor is a child process (the test binary as
// the attack forkersupervisor); the control is every one of them seen
// alive before the kill. Either of two things ends the forker: its parent
// death signal, and its socket's end closing with the supervisor (a
// scratch forker with neither outlived the supervisor here; with either
// one it died).
func TestForkerDiesWithSupervisor(t *testing.T) {
	forEachForker(t, testForkerDiesWithSupervisor)
}

func testForkerDiesWithSupervisor(t *testing.T, program string) {
	mark := testMark() + "-forkersupervisor"
	cmd := exec.Command(os.Args[0], "forkersupervisor", program, mark)
	cmd.Env = append(os.Environ(), attackEnv+"=1", markEnv+"="+testMark())
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
		killLeftovers(mark)
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	var fk, spare int
	if _, serr := fmt.Sscanf(line, "PIDS %d %d", &fk, &spare); err != nil || serr != nil {
		t.Fatalf("the supervisor said %q (%v, %v)", line, err, serr)
	}
	if !waitFor(func() bool { return len(marked(mark)) > 0 }) {
		t.Fatal("control: the command never started")
	}
	procs := map[string]int{"forker": fk, "spare": spare}
	for i, pid := range marked(mark) {
		procs[fmt.Sprintf("command %d", i)] = pid
	}
	starts := map[string]string{}
	for name, pid := range procs {
		st := startTime(pid)
		if st == "" {
			t.Fatalf("control: the %s %d is not alive", name, pid)
		}
		starts[name] = st
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	for name, pid := range procs {
		if !waitFor(func() bool { return startTime(pid) != starts[name] }) {
			t.Errorf("the %s %d outlived its supervisor", name, pid)
		}
	}
}

// startTime returns the start time of process pid while it runs (not a
// zombie), "" otherwise: a process id reused meanwhile has another.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	// state is field 3, starttime field 22 of the whole line.
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// Runs keep coming, concurrently, while the forker is killed again and
// again: a run either runs its command confined (a user namespace of its
// own mapping root onto the sandbox user, a PID namespace of its own) or
// fails with an error naming the forker; none runs unconfined, and none
// hangs. The controls: the forker was killed, runs ran, and the same
// witness run without the sandbox shows the host's namespaces.
func TestForkerKilledRepeatedly(t *testing.T) {
	forEachForker(t, testForkerKilledRepeatedly)
}

func testForkerKilledRepeatedly(t *testing.T, program string) {
	witness := []string{"sh", "-c", "cat /proc/self/uid_map; readlink /proc/self/ns/user /proc/self/ns/pid"}
	host, err := exec.Command(witness[0], witness[1:]...).Output()
	must(t, err)
	myUser, _ := os.Readlink("/proc/self/ns/user")
	myPID, _ := os.Readlink("/proc/self/ns/pid")
	confined := func(out string) bool {
		f := strings.Fields(out)
		return len(f) == 5 && f[0] == "0" && f[1] != "0" && f[2] == "1" && f[3] != myUser && f[4] != myPID
	}
	if confined(string(host)) {
		t.Fatalf("control: the witness run without the sandbox looks confined: %q", host)
	}
	for _, spares := range []int{0, 1} {
		t.Run(fmt.Sprintf("spares=%d", spares), func(t *testing.T) {
			before := children()
			n := newTestNative(t, NativeOptions{Helper: program, Spares: spares}, nil)
			stop := make(chan struct{})
			var kills int
			killer := make(chan struct{})
			go func() {
				defer close(killer)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if fk := n.forkerPid(); fk != 0 && syscall.Kill(fk, syscall.SIGKILL) == nil {
						kills++
					}
					time.Sleep(time.Duration(i%7) * time.Millisecond)
				}
			}()
			var mu sync.Mutex
			var ok, failed int
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					for range 12 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						r, err := runOn(n, ctx, Policy{}, witness...)
						cancel()
						mu.Lock()
						switch {
						case err != nil && strings.Contains(err.Error(), "forker"):
							failed++
						case err != nil:
							t.Errorf("a run failed without naming the forker: %v", err)
						case !r.OK() || !confined(string(r.Stdout)):
							t.Errorf("a run's witness: %q (stderr %q, %s)", r.Stdout, r.Stderr, r.Summary())
						default:
							ok++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			close(stop)
			<-killer
			t.Logf("%d runs confined, %d failed naming the forker, %d forkers killed", ok, failed, kills)
			if kills == 0 || ok == 0 {
				t.Fatalf("control: %d forkers killed, %d runs ran", kills, ok)
			}
			n.Close()
			if extra := newChildren(before); len(extra) > 0 {
				t.Errorf("children left after Close: %v", extra)
			}
		})
	}
}

// A clone the forker made for a request it then failed is this process's
// child (CLONE_PARENT), which the forker cannot reap and whose process id
// never arrived: the start reaps it, and no child is left. Here the clone
// fails on its id maps (a host id no map takes), which the forker reports
// as a refusal; a forker killed between its clone and its answer is
// TestForkerKilledRepeatedly's. The control is the child the refusal left
// before it was reaped (a scratch start that did not reap left it as a
// zombie).
func TestForkerReapsFailedClones(t *testing.T) {
	forEachForker(t, testForkerReapsFailedClones)
}

func testForkerReapsFailedClones(t *testing.T, program string) {
	f := &forker{program: program, timeout: 10 * time.Second}
	defer f.close()
	sh := helperShape{flags: namespaceFlags(NetworkNone), uid: DefaultUID}
	var fds []*os.File
	for range 2 {
		r, w, err := os.Pipe()
		must(t, err)
		defer r.Close()
		defer w.Close()
		fds = append(fds, w, r)
	}
	fds[1], fds[2] = fds[2], fds[1] // stdout, stderr, then a read end as the configuration's
	for i := range 3 {
		before := children()
		_, _, err := f.start(sh, forkerBits(sh, false, false, false), -1, DefaultUID, fds)
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("start %d with an unmappable host id: %v; want a refusal", i, err)
		}
		if f.pid() == 0 {
			t.Fatalf("start %d: the refusing forker was stopped", i)
		}
		if extra := slices.DeleteFunc(newChildren(before), func(pid int) bool { return pid == f.pid() }); len(extra) > 0 {
			t.Fatalf("start %d (%v) left children: %v", i, err, extra)
		}
	}
}

// A descriptor this program holds without close-on-exec (inherited from
// its own parent, or opened so) reaches neither the forker nor the
// helpers it starts, and the forker holds no directory of this program's
// as its working directory (nor do its helpers, before they enter their
// own). The controls: the descriptor is open and not close-on-exec here
// when the forker starts, and this program's working directory is not /.
// (Before the forker closed such descriptors and ran in /, it and every
// spare held the descriptor, and both worked in this directory.)
func TestForkerInheritsNothing(t *testing.T) {
	forEachForker(t, testForkerInheritsNothing)
}

func testForkerInheritsNothing(t *testing.T, program string) {
	stray, err := os.CreateTemp("", "clawtool-stray-")
	must(t, err)
	stray.Close()
	defer os.Remove(stray.Name())
	fd, err := syscall.Open(stray.Name(), syscall.O_RDONLY, 0)
	must(t, err)
	defer syscall.Close(fd)
	var want syscall.Stat_t
	must(t, syscall.Fstat(fd, &want))
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		t.Fatalf("control: the stray descriptor's flags %#x (%v)", flags, err)
	}
	wd, _ := os.Getwd()
	if wd == "/" {
		t.Fatal("control: this test runs in /")
	}
	n := newTestNative(t, NativeOptions{Helper: program, Spares: 1}, nil)
	r, err := runOn(n, context.Background(), Policy{}, "true")
	if err != nil || !r.OK() {
		t.Fatalf("%v %+v", err, r)
	}
	n.settle()
	procs := map[string]int{"forker": n.forkerPid(), "spare": n.waitingSpare()}
	for name, pid := range procs {
		if pid == 0 {
			t.Fatalf("control: no %s", name)
		}
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		must(t, err)
		for _, e := range ents {
			var st syscall.Stat_t
			if syscall.Stat(dir+"/"+e.Name(), &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
				t.Errorf("the %s %d holds the stray descriptor as %s", name, pid, e.Name())
			}
		}
		if cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); cwd == wd {
			t.Errorf("the %s %d works in this program's directory %s", name, pid, wd)
		}
	}
}

// A run that can write where the helper program lies can replace it, and
// the next forker, started from that path as this program's user in the
// host's namespaces, runs the replacement: code outside the sandbox. A
// run whose workspace holds the backend's helper program is refused
// before anything starts. The control is the same run with the check
// turned off (allowHelperInWorkspace): the command replaces the program,
// and the next backend's first run starts the replacement, which leaves
// its mark on the host outside the workspace.
func TestHelperProgramInWorkspace(t *testing.T) {
	requireSandbox(t)
	built := BuildHelperProgram(t, "")
	ws, err := os.MkdirTemp("", "clawtool-helperws-")
	must(t, err)
	defer os.RemoveAll(ws)
	bin := filepath.Join(ws, "bin")
	must(t, os.Mkdir(bin, 0o755))
	for _, d := range []string{ws, bin} {
		must(t, os.Chmod(d, 0o755))
		must(t, os.Chown(d, DefaultUID, DefaultUID))
	}
	program := filepath.Join(bin, "clawtool-sandbox-helper")
	pwned := filepath.Join("/var/tmp", unique("pwned"))
	defer os.Remove(pwned)
	replace := fmt.Sprintf("rm -f bin/clawtool-sandbox-helper && printf '#!/bin/sh\\n: > %s\\n' > bin/clawtool-sandbox-helper && chmod 755 bin/clawtool-sandbox-helper && echo replaced", pwned)
	ctx := context.Background()
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("allowHelperInWorkspace=%v", allow), func(t *testing.T) {
			copyFile(t, built, program, 0o755)
			hooks := &nativeHooks{allowHelperInWorkspace: allow}
			n := newTestNative(t, NativeOptions{Helper: program}, hooks)
			r, err := runOn(n, ctx, Policy{Workspace: ws}, "sh", "-c", replace)
			n.Close()
			if allow {
				if err != nil || !r.OK() || string(r.Stdout) != "replaced\n" {
					t.Fatalf("control: the run did not replace the program: %v %+v", err, r)
				}
				next := newTestNative(t, NativeOptions{Helper: program}, hooks)
				runOn(next, ctx, Policy{}, "true") // its forker is the replacement
				next.Close()
				if _, err := os.Stat(pwned); err != nil {
					t.Fatalf("control: the replaced program did not run: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "inside the run's workspace") {
				t.Fatalf("the run with the helper program in its workspace: %v %+v; want a refusal", err, r)
			}
			if r, err := runOn(n, ctx, Policy{Workspace: bin + "/.."}, "true"); err == nil {
				t.Fatalf("the run with the workspace named through ..: %+v; want a refusal", r)
			}
			os.Remove(pwned)
			next := newTestNative(t, NativeOptions{Helper: program}, nil)
			if r, err := runOn(next, ctx, Policy{}, "true"); err != nil || !r.OK() {
				t.Fatalf("the program after the refused run: %v %+v", err, r)
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Fatal("the refused run's command ran")
			}
		})
	}
}

// The helper program named through a name the run can change is refused
// too, however the name reaches it: a symbolic link in the workspace to
// the program outside (the program itself is outside, so the check of the
// resolved path alone let the run through), or a link outside that passes
// through a link in the workspace. The runs' commands rewrite what the name leads to;
// the control (the check off) shows each rewrite reaches what the next
// forker would run, and with the check each run is refused before its
// command starts and the program outside is unchanged.
func TestHelperProgramReachedThroughWorkspace(t *testing.T) {
	requireSandbox(t)
	built := BuildHelperProgram(t, "")
	ctx := context.Background()
	for _, shape := range []string{"symlink", "chain"} {
		for _, allow := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/allowHelperInWorkspace=%v", shape, allow), func(t *testing.T) {
				outside, err := os.MkdirTemp("", "clawtool-helperout-")
				must(t, err)
				defer os.RemoveAll(outside)
				ws, err := os.MkdirTemp("", "clawtool-helperws-")
				must(t, err)
				defer os.RemoveAll(ws)
				must(t, os.Chmod(ws, 0o755))
				must(t, os.Chown(ws, DefaultUID, DefaultUID))
				real := filepath.Join(outside, "clawtool-sandbox-helper")
				copyFile(t, built, real, 0o755)
				link := filepath.Join(ws, "helper")
				var program, rewrite string
				switch shape {
				case "symlink": // Helper is the link in the workspace
					must(t, os.Symlink(real, link))
					must(t, os.Lchown(link, DefaultUID, DefaultUID))
					program = link
					rewrite = "rm -f helper && printf '#!/bin/sh\\n' > helper && chmod 755 helper && echo rewritten"
				case "chain": // Helper is a link outside through a link in the workspace
					must(t, os.Symlink(real, link))
					must(t, os.Lchown(link, DefaultUID, DefaultUID))
					program = filepath.Join(outside, "via")
					must(t, os.Symlink(link, program))
					rewrite = "rm -f helper && printf '#!/bin/sh\\n' > helper && chmod 755 helper && echo rewritten"
				}
				hooks := &nativeHooks{allowHelperInWorkspace: allow}
				n := newTestNative(t, NativeOptions{Helper: program}, hooks)
				r, err := runOn(n, ctx, Policy{Workspace: ws}, "sh", "-c", rewrite)
				n.Close()
				got, rerr := os.ReadFile(program)
				must(t, rerr)
				if allow {
					if err != nil || !r.OK() || string(r.Stdout) != "rewritten\n" {
						t.Fatalf("control: the run did not rewrite the name: %v %+v", err, r)
					}
					if string(got) != "#!/bin/sh\n" {
						t.Fatalf("control: %s does not lead to what the run wrote", program)
					}
					return
				}
				if err == nil {
					t.Fatalf("the run that can change %s: %+v; want a refusal", program, r)
				}
				if want, _ := os.ReadFile(built); string(got) != string(want) {
					t.Fatalf("the refused run changed %s", program)
				}
			})
		}
	}
}

// reachesInto follows a path as the kernel opens it and reports any name
// on the way in the workspace; what it cannot follow counts as reaching in.
func TestReachesInto(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	out := filepath.Join(root, "out")
	must(t, os.MkdirAll(filepath.Join(ws, "bin"), 0o755))
	must(t, os.MkdirAll(out, 0o755))
	must(t, os.WriteFile(filepath.Join(out, "helper"), nil, 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "bin", "helper"), nil, 0o755))
	must(t, os.Symlink(filepath.Join(out, "helper"), filepath.Join(ws, "tohelper")))
	must(t, os.Symlink(filepath.Join(ws, "tohelper"), filepath.Join(out, "via")))
	must(t, os.Symlink("helper", filepath.Join(out, "relative")))
	must(t, os.Symlink("../ws/tohelper", filepath.Join(out, "relvia")))
	must(t, os.Symlink(ws, filepath.Join(root, "wslink")))
	must(t, os.Symlink("loop", filepath.Join(out, "loop")))
	for _, c := range []struct {
		path string
		want bool
	}{
		{filepath.Join(out, "helper"), false},
		{filepath.Join(out, "relative"), false},    // a link outside to a name outside
		{filepath.Join(out, "missing"), false},     // nothing to follow, nothing in the workspace
		{filepath.Join(ws, "bin", "helper"), true}, // in the workspace
		{filepath.Join(ws, "tohelper"), true},      // a link in the workspace
		{filepath.Join(out, "via"), true},          // a link outside through one in the workspace
		{filepath.Join(out, "relvia"), true},       // the same, relative
		{filepath.Join(root, "wslink", "bin", "helper"), true},
		{filepath.Join(out, "..", "ws", "bin", "helper"), true},
		{filepath.Join(out, "loop"), true}, // cannot be followed: refused
		{"relative/helper", true},          // not absolute: refused
	} {
		if got := reachesInto(c.path, ws); got != c.want {
			t.Errorf("reachesInto(%s) = %v, want %v", strings.TrimPrefix(c.path, root), got, c.want)
		}
	}
}

// A clone whose exec fails after its setsid (here: the forker's program
// lost its execute bits after the forker started, so the exec of
// /proc/self/exe fails with EACCES) is this process's child, in a session
// of its own and holding no descriptor once it has exited: neither the
// forker's session nor the request's configuration pipe finds it. The
// start that was refused reaps it all the same, by the name the forker
// gave the clone, and no child is left. The control is the same refusal
// asked of the forker directly and reaped by the session and the pipe
// alone, as before the clones were named: the zombie stays (it did at
// every refusal, for the program's life), until the name finds it.
func TestForkerReapsCloneFailedAtExec(t *testing.T) {
	forEachForker(t, testForkerReapsCloneFailedAtExec)
}

func testForkerReapsCloneFailedAtExec(t *testing.T, program string) {
	if program == "" {
		self, err := os.Executable()
		must(t, err)
		program = self
	}
	dir, err := os.MkdirTemp("", "clawtool-noexec-")
	must(t, err)
	defer os.RemoveAll(dir)
	must(t, os.Chmod(dir, 0o755))
	copyProgram := filepath.Join(dir, "forker")
	copyFile(t, program, copyProgram, 0o755)
	f := &forker{program: copyProgram, timeout: 10 * time.Second}
	defer f.close()
	f.mu.Lock()
	err = f.launchLocked()
	f.mu.Unlock()
	must(t, err)
	// The forker runs; the file it runs is no longer executable.
	must(t, os.Chmod(copyProgram, 0o644))
	sh := helperShape{flags: namespaceFlags(NetworkNone), uid: DefaultUID}
	var fds []*os.File
	for range 2 {
		r, w, err := os.Pipe()
		must(t, err)
		defer r.Close()
		defer w.Close()
		fds = append(fds, w, r)
	}
	fds[1], fds[2] = fds[2], fds[1] // stdout, stderr, then a read end as the configuration's
	uid, gid := sandboxIDs(DefaultUID)
	notForker := func(pids []int) []int {
		return slices.DeleteFunc(pids, func(pid int) bool { return pid == f.pid() })
	}
	{
		before := children()
		req := helper.ForkRequest{Flags: uint64(sh.flags), UID: uint32(uid), GID: uint32(gid), Bits: forkerBits(sh, false, false, false), Tag: 0x5eed}
		raw := []int{int(fds[0].Fd()), int(fds[1].Fd()), int(fds[2].Fd()), int(fds[3].Fd())}
		f.mu.Lock()
		reply, err := f.askLocked(req.Encode(), unix.UnixRights(raw...))
		f.mu.Unlock()
		if err != nil || reply[0] != helper.ForkRefused || !strings.Contains(string(reply), "permission denied") {
			t.Fatalf("control: the forker answered %q (%v); want a refusal saying permission denied", reply, err)
		}
		// Once it has exited (until then it may still hold the pipe).
		var extra []int
		if !waitFor(func() bool {
			extra = notForker(newChildren(before))
			return len(extra) == 1 && startTime(extra[0]) == ""
		}) {
			t.Fatalf("control: the refusal left children %v; want the failed clone alone, exited", extra)
		}
		reapOrphans(f.pid(), fds[2], "")
		if extra = notForker(newChildren(before)); len(extra) != 1 {
			t.Fatalf("control: reaped by the session and the pipe alone, the children left are %v; want the failed clone", extra)
		}
		ppid, sid, comm, ok := procStat(extra[0])
		if !ok || ppid != os.Getpid() || sid != extra[0] || comm != helper.CloneName(req.Tag) {
			t.Fatalf("control: the failed clone %d: parent %d, session %d, name %q", extra[0], ppid, sid, comm)
		}
		reapOrphans(f.pid(), fds[2], helper.CloneName(req.Tag))
		if extra := notForker(newChildren(before)); len(extra) > 0 {
			t.Fatalf("the failed clone %v was not reaped by its name", extra)
		}
	}
	for i := range 3 {
		before := children()
		_, _, err := f.start(sh, forkerBits(sh, false, false, false), uid, gid, fds)
		if err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("start %d of a program without execute bits: %v; want a refusal saying so", i, err)
		}
		if f.pid() == 0 {
			t.Fatalf("start %d: the refusing forker was stopped", i)
		}
		if extra := notForker(newChildren(before)); len(extra) > 0 {
			t.Fatalf("start %d (%v) left children: %v", i, err, extra)
		}
	}
}

// A descriptor this program holds without close-on-exec (inherited from
// its parent, or opened so) reaches no command, however its helper was
// started: by the forker, or by this program itself (a helper without a
// user namespace, or nativeHooks.directStart), cold or as a spare. From
// inside the sandbox the attacker lists its descriptors and reads from
// every one beyond 0, 1 and 2; it finds none. Nor does a spare this
// program started itself hold the descriptor while it waits. The control
// is the same attacker started by this program without the sandbox: it
// holds the descriptor and reads the secret through it.
func TestStrayDescriptorReachesNoCommand(t *testing.T) {
	forEachForker(t, testStrayDescriptorReachesNoCommand)
}

func testStrayDescriptorReachesNoCommand(t *testing.T, program string) {
	f := newFixture(t)
	secret := filepath.Join(f.outside, "secret")
	must(t, os.WriteFile(secret, []byte("stray-secret"), 0o600))
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0) // not close-on-exec
	must(t, err)
	defer syscall.Close(fd)
	var want syscall.Stat_t
	must(t, syscall.Fstat(fd, &want))
	if out := f.unsandboxed(t, asRoot, "strayfds"); !strings.HasPrefix(out, "OK") || !strings.Contains(out, "stray-secret") {
		t.Fatalf("control: the attacker started without the sandbox: %q", out)
	}
	for _, direct := range []bool{false, true} {
		for _, userns := range []bool{true, false} {
			for _, spares := range []int{0, 1} {
				t.Run(fmt.Sprintf("direct=%v/userns=%v/spares=%d", direct, userns, spares), func(t *testing.T) {
					n := newTestNative(t, NativeOptions{Helper: program, Spares: spares}, &nativeHooks{directStart: direct})
					p := f.policy()
					if !userns {
						p.Without = []Layer{LayerUserNS}
					}
					for i := range 2 { // cold, then from the spare when there is one
						r := f.sandboxed(t, context.Background(), n, p, "strayfds")
						if !strings.Contains(string(r.Stdout), "BLOCKED no descriptor beyond") {
							t.Fatalf("run %d: %q (stderr %q, %s)", i, r.Stdout, r.Stderr, r.Summary())
						}
					}
					n.settle()
					if pid := n.waitingSpare(); pid != 0 {
						dir := fmt.Sprintf("/proc/%d/fd", pid)
						ents, err := os.ReadDir(dir)
						must(t, err)
						for _, e := range ents {
							var st syscall.Stat_t
							if syscall.Stat(dir+"/"+e.Name(), &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
								t.Errorf("the waiting spare %d holds the stray descriptor as %s", pid, e.Name())
							}
						}
					} else if spares > 0 {
						t.Fatal("control: no spare waiting")
					}
				})
			}
		}
	}
}

// A hard link is another name of the helper program's file. The run
// cannot make one in its workspace: the program lies on another mount in
// the run's view (a read-only copy of the host's root), or, without the
// mount namespace, Landlock refuses a link into the workspace from where
// the run may only read. The control makes the same link outside the
// sandbox as the sandbox user (the program and the workspace share a file
// system, and the program is that user's, so neither EXDEV nor the
// kernel's protected_hardlinks would refuse it).
//
// A link that was there before the run is another matter: through it, a
// run whose workspace is bound directly (a streamed run, or Policy.Without
// write_budget) changes the program's file itself. The control (the check
// off) makes the program world-writable from inside the sandbox, so that
// any user could then replace what the next forker runs as this program's
// user; through the write budget's overlay the same change is copied up
// and applied beside the name, leaving the program as it was. A helper
// program with more than one name is refused before anything starts.
func TestHelperProgramHardLink(t *testing.T) {
	requireSandbox(t)
	built := BuildHelperProgram(t, "")
	base, err := os.MkdirTemp("/var/tmp", "clawtool-hardlink-")
	must(t, err)
	defer os.RemoveAll(base)
	must(t, os.Chmod(base, 0o755))
	progDir, ws := filepath.Join(base, "prog"), filepath.Join(base, "ws")
	for _, d := range []string{progDir, ws} {
		must(t, os.Mkdir(d, 0o755))
		must(t, os.Chown(d, DefaultUID, DefaultUID))
	}
	program := filepath.Join(progDir, "clawtool-sandbox-helper")
	copyFile(t, built, program, 0o755)
	must(t, os.Chown(program, DefaultUID, DefaultUID))
	var ps, ws0 syscall.Stat_t
	must(t, syscall.Stat(program, &ps))
	must(t, syscall.Stat(ws, &ws0))
	if ps.Dev != ws0.Dev {
		t.Fatalf("control: the program and the workspace are on different file systems (%d, %d)", ps.Dev, ws0.Dev)
	}
	// Control: the sandbox user makes the link outside the sandbox.
	probe := filepath.Join(ws, "probe")
	ln := exec.Command("ln", program, probe)
	ln.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: DefaultUID, Gid: DefaultUID, Groups: []uint32{}}}
	if out, err := ln.CombinedOutput(); err != nil {
		t.Fatalf("control: the sandbox user could not link the program outside the sandbox: %v %s", err, out)
	}
	must(t, os.Remove(probe))
	ctx := context.Background()
	mode := func() os.FileMode {
		fi, err := os.Stat(program)
		must(t, err)
		return fi.Mode().Perm()
	}
	t.Run("made by the run", func(t *testing.T) {
		n := newTestNative(t, NativeOptions{Helper: program}, nil)
		for _, without := range [][]Layer{nil, {LayerWriteBudget}, {LayerMountNS}} {
			r, err := runOn(n, ctx, Policy{Workspace: ws, Without: without}, "sh", "-c", "ln "+program+" link && echo linked")
			if err != nil {
				t.Fatalf("without %v: %v", without, err)
			}
			if r.OK() || strings.Contains(string(r.Stdout), "linked") {
				t.Fatalf("without %v: the run linked the program: %+v", without, r)
			}
			if _, err := os.Lstat(filepath.Join(ws, "link")); err == nil {
				t.Fatalf("without %v: the link is on the host", without)
			}
			t.Logf("without %v: %s", without, bytes.TrimSpace(r.Stderr))
		}
		var st syscall.Stat_t
		must(t, syscall.Stat(program, &st))
		if st.Nlink != 1 {
			t.Fatalf("the program has %d names after the runs", st.Nlink)
		}
	})
	t.Run("there before the run", func(t *testing.T) {
		h := filepath.Join(ws, "h")
		defer os.Remove(h)
		for _, allow := range []bool{true, false} {
			for _, budget := range []bool{false, true} {
				t.Run(fmt.Sprintf("allowHelperInWorkspace=%v/budget=%v", allow, budget), func(t *testing.T) {
					// Afresh: the overlay's apply step replaces the name it
					// changed with a file of its own.
					os.Remove(h)
					must(t, os.Link(program, h))
					must(t, os.Chmod(program, 0o755))
					n := newTestNative(t, NativeOptions{Helper: program}, &nativeHooks{allowHelperInWorkspace: allow})
					p := Policy{Workspace: ws}
					if !budget {
						p.Without = []Layer{LayerWriteBudget}
					}
					r, err := runOn(n, ctx, p, "sh", "-c", "chmod 0777 h && echo changed")
					n.Close()
					got := mode()
					switch {
					case !allow:
						if err == nil || !strings.Contains(err.Error(), "names") {
							t.Fatalf("the run with another name of the program in its workspace: %v %+v; want a refusal", err, r)
						}
						if got != 0o755 {
							t.Fatalf("the refused run changed the program's mode to %v", got)
						}
					case err != nil || !r.OK() || string(r.Stdout) != "changed\n":
						t.Fatalf("control: the run did not change its name: %v %+v", err, r)
					case !budget && got != 0o777:
						t.Fatalf("control: bound directly, the run's chmod left the program %v; want it world-writable", got)
					case budget && got != 0o755:
						t.Fatalf("through the overlay, the run's chmod reached the program: %v", got)
					case budget:
						if fi, err := os.Stat(h); err != nil || fi.Mode().Perm() != 0o777 {
							t.Fatalf("control: the overlay did not apply the run's chmod to its name: %v %v", fi, err)
						}
					}
				})
			}
		}
	})
}

// A manualClock arms the forker's idle timers without time: each is kept
// with its duration and fires only when the test says.
type manualClock struct {
	mu     sync.Mutex
	timers []*manualTimer
}

type manualTimer struct {
	d       time.Duration
	fn      func()
	stopped bool
}

func (c *manualClock) after(d time.Duration, fn func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &manualTimer{d: d, fn: fn}
	c.timers = append(c.timers, tm)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// armed returns the timers armed so far.
func (c *manualClock) armed() []*manualTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.timers)
}

// A forker with no request for its idle time is stopped and reaped; the
// next start starts another, which serves. Each request re-arms the
// timer: one armed before a later request finds, when it fires, that the
// forker is still wanted (it fires anyway here, as a timer already firing
// when it is stopped does), and one firing after Close does nothing.
// Starts racing the timer are each served by a whole forker, never one
// being stopped. The control is the forker alive until its timer fired.
func TestForkerIdleExits(t *testing.T) {
	forEachForker(t, testForkerIdleExits)
}

func testForkerIdleExits(t *testing.T, program string) {
	clock := &manualClock{}
	f := &forker{program: program, timeout: 10 * time.Second, idle: time.Hour, after: clock.after}
	defer f.close()
	sh := helperShape{flags: namespaceFlags(NetworkNone), uid: DefaultUID}
	var fds []*os.File
	for range 2 {
		r, w, err := os.Pipe()
		must(t, err)
		defer r.Close()
		defer w.Close()
		fds = append(fds, w, r)
	}
	fds[1], fds[2] = fds[2], fds[1]
	// An unmappable host id: the forker answers with a refusal and stays;
	// a refusal is a request it served.
	ask := func() error {
		_, _, err := f.start(sh, forkerBits(sh, false, false, false), -1, DefaultUID, fds)
		if err == nil || !strings.Contains(err.Error(), "the forker refused") {
			return fmt.Errorf("a start: %v; want the forker's refusal", err)
		}
		return nil
	}
	must(t, ask())
	first := f.pid()
	if first == 0 || len(clock.armed()) != 1 || clock.armed()[0].d != time.Hour {
		t.Fatalf("after a request: forker %d, timers %v; want the forker and one timer of its idle time", first, clock.armed())
	}
	must(t, ask())
	timers := clock.armed()
	if len(timers) != 2 || !timers[0].stopped {
		t.Fatalf("a second request did not re-arm the timer: %+v", timers)
	}
	timers[0].fn() // armed before the last request
	if f.pid() != first || exited(first) {
		t.Fatalf("a timer armed before the last request stopped the forker")
	}
	timers[1].fn()
	if f.pid() != 0 || isChild(first) {
		t.Fatalf("the idle forker %d still runs or was not reaped (forker now %d)", first, f.pid())
	}
	must(t, ask())
	second := f.pid()
	if second == 0 || second == first {
		t.Fatalf("the start after the idle stop: forker %d (was %d)", second, first)
	}

	// Starts racing the latest timer.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	wg.Go(func() {
		for range 8 {
			if err := ask(); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		for range 8 {
			if ts := clock.armed(); len(ts) > 0 {
				ts[len(ts)-1].fn()
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	f.close()
	ts := clock.armed()
	if last := ts[len(ts)-1]; !last.stopped {
		t.Fatal("Close left the idle timer armed")
	}
	ts[len(ts)-1].fn() // firing after Close
	if f.pid() != 0 {
		t.Fatalf("a forker runs after Close: %d", f.pid())
	}
	if _, _, err := f.start(sh, 0, -1, DefaultUID, fds); !errors.Is(err, errForkerClosed) {
		t.Fatalf("a start after Close: %v", err)
	}

	// A backend's forker idles for NativeOptions.Idle, on the real clock.
	n := newTestNative(t, NativeOptions{Helper: program, Idle: time.Millisecond}, nil)
	for i := range 2 {
		r, err := runOn(n, context.Background(), Policy{}, "echo", "ok")
		if err != nil || !r.OK() || string(r.Stdout) != "ok\n" {
			t.Fatalf("run %d: %v %+v", i, err, r)
		}
		fk := n.forkerPid() // 0 when it has stopped already
		if !waitFor(func() bool { return n.forkerPid() == 0 && !isChild(fk) }) {
			t.Fatalf("run %d: the backend's forker %d did not stop after its idle time", i, fk)
		}
	}
}
