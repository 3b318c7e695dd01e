package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"golang.org/x/sys/unix"
)

// A helperShape is everything a helper is fixed to when it is cloned, so
// everything two runs must share for one to use a helper started for the
// other: the namespaces (the clone flags: network none or allowed, the
// layers the policy turns off), whether the helper builds a root (a spare
// of such a shape has assembled the policy-independent part of it before
// the claim), the host id the sandbox root maps to (or that the helper runs
// as without a user namespace), whether the command's standard input is a
// pipe (a Reader) or /dev/null, whether the helper has a trace pipe, and
// whether it starts the command in fork mode. The helper's arguments are
// constant, and its environment only says whether it builds a root and
// whether it forks. What is not in the shape is sent in the configuration
// after the claim, and the cgroup leaf is joined at the claim.
type helperShape struct {
	flags  uintptr
	mounts bool // the helper builds a root (helper.PrepareRootEnv)
	uid    int
	stdin  bool
	trace  bool
	// fork: the helper starts the command in fork mode (see
	// helper.ForkEnv); set when it builds a root and the probe found the
	// kernel able.
	fork bool
}

// A helperProc is a started helper and the parent's ends of its pipes,
// each made for it alone: the configuration, the setup error, the trace,
// and the command's standard streams. Until a run writes the
// configuration the helper is blocked reading it, with nothing of the
// run's applied and no untrusted input read.
type helperProc struct {
	// cmd is the helper started here; nil for one the forker started,
	// whose process is proc all the same. state is how it ended, once
	// wait returned.
	cmd   *exec.Cmd
	proc  *os.Process
	state *os.ProcessState
	// release gives up the spawning thread's hold for the helper once it
	// is reaped (see spawn); nil for none.
	release func()
	cfgW    *os.File // nil once the configuration was sent
	// mountW is the supervisor's end of the socket the workspace tree is
	// passed on (helper.MountFD); nil for a helper that builds no root.
	mountW *os.File
	errR   *os.File
	trace  *os.File // nil unless the shape traces
	// stdinW is nil when the command's stdin is /dev/null or a file of
	// the caller's; stdoutR and stderrR are always pipes.
	stdinW, stdoutR, stderrR *os.File
	t0, t1                   uint64 // monotonic clock around the clone and exec
	// readyCh is closed when the helper's first byte arrived or its pipe
	// ended; readyErr says which (nil: helper.Ready).
	readyCh  chan struct{}
	readyErr error
}

// startHelper starts a helper of shape sh for the pool p: from its
// forker when it uses one for the shape (see usesForker), otherwise here.
// stdin is the caller's file to hand over as the command's standard input
// (only when sh.stdin is false; nil means /dev/null). The helper starts
// outside any leaf and waits for its run (see handOver); a spare's may
// come much later. The helper program is p's (NativeOptions.Helper),
// empty for this one.
func startHelper(p *sparePool, sh helperShape, stdin *os.File) (h *helperProc, err error) {
	program := p.program
	path := selfProgram
	if program != "" {
		if !filepath.IsAbs(program) {
			return nil, fmt.Errorf("the helper program %q (NativeOptions.Helper) is not an absolute path", program)
		}
		path = program
	}
	hp := &helperProc{}
	h = hp
	var child []*os.File // the helper's ends, closed here once it started
	defer func() {
		for _, f := range child {
			f.Close()
		}
		if err != nil {
			hp.closeAll()
		}
	}()
	pipe := func() (r, w *os.File) {
		if err != nil {
			return nil, nil
		}
		r, w, err = os.Pipe()
		return r, w
	}
	cfgR, cfgW := pipe()
	h.cfgW = cfgW
	errR, errW := pipe()
	h.errR = errR
	outR, outW := pipe()
	h.stdoutR = outR
	errOutR, errOutW := pipe()
	h.stderrR = errOutR
	child = append(child, cfgR, errW, outW, errOutW)
	if sh.stdin {
		var inR *os.File
		inR, h.stdinW = pipe()
		child = append(child, inR)
		stdin = inR
	}
	var mountR *os.File
	if sh.mounts && err == nil {
		var fds [2]int
		if fds, err = unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0); err == nil {
			h.mountW, mountR = os.NewFile(uintptr(fds[0]), "mount"), os.NewFile(uintptr(fds[1]), "mount")
			child = append(child, mountR)
		}
	}
	var traceW *os.File
	if sh.trace {
		h.trace, traceW = pipe()
		child = append(child, traceW)
	}
	if err != nil {
		return nil, err
	}

	if p.usesForker(sh) {
		// The forker clones the helper with its small address space; the
		// helper is this process's child all the same.
		fds := []*os.File{outW, errOutW, cfgR, errW}
		if stdin != nil {
			fds = append(fds, stdin)
		}
		if mountR != nil {
			fds = append(fds, mountR)
		}
		if traceW != nil {
			fds = append(fds, traceW)
		}
		uid, gid := sandboxIDs(sh.uid)
		h.t0 = monotonic()
		h.proc, h.release, err = p.fk.start(sh, forkerBits(sh, stdin != nil, mountR != nil, traceW != nil), uid, gid, fds)
		h.t1 = monotonic()
		if err == nil {
			h.readyCh = make(chan struct{})
			go h.readReady()
			return h, nil
		}
		if !errors.Is(err, errForkerClosed) {
			return nil, err
		}
		// After Native.Close: started here, as every run then starts.
	}
	cmd := exec.Command(path)
	cmd.Args = []string{"clawtool-sandbox"}
	// The command gets the policy's environment, not this one.
	cmd.Env = helper.HelperEnv(sh.mounts, sh.fork)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	// Files, not writers: os/exec starts no goroutine, and the run copies
	// the streams itself from the moment it owns the helper.
	cmd.Stdout, cmd.Stderr = outW, errOutW
	// helper.MountFD is closed in a helper that builds no root, and
	// helper.TraceFD in one that does not trace (a nil file is closed in
	// the child): a descriptor this program holds without close-on-exec
	// at either number is not taken for the helper's. The helper closes
	// every other one beyond them at its start.
	cmd.ExtraFiles = []*os.File{cfgR, errW, mountR, traceW}
	cmd.SysProcAttr = sysProcAttr(sh.flags, sh.uid)
	h.cmd = cmd
	h.t0 = monotonic()
	// From the spawning thread: the helper dies with the thread that
	// started it (its Pdeathsig).
	h.release, err = spawn(cmd.Start)
	h.t1 = monotonic()
	if err != nil {
		return nil, err
	}
	h.proc = cmd.Process
	h.readyCh = make(chan struct{})
	go h.readReady()
	return h, nil
}

// awaitReady waits until the helper is ready (helper.Ready), or has
// ended.
func (h *helperProc) awaitReady() error {
	<-h.readyCh
	return h.readyErr
}

// readReady reads the helper's first byte, for awaitReady: it runs from
// the start, so that the helper's readiness is known to a claim without a
// read of its own and the pipe has one reader at a time.
func (h *helperProc) readReady() {
	var b [1]byte
	if n, _ := h.errR.Read(b[:]); n != 1 || b[0] != helper.Ready {
		h.readyErr = errors.New("the helper ended before it was ready")
	}
	close(h.readyCh)
}

// closeAll closes the parent's ends of the helper's pipes.
func (h *helperProc) closeAll() {
	for _, f := range []*os.File{h.cfgW, h.mountW, h.errR, h.trace, h.stdinW, h.stdoutR, h.stderrR} {
		if f != nil {
			f.Close()
		}
	}
}

// kill kills the helper, or the command it became, with its namespace or
// process group.
func (h *helperProc) kill() {
	// The command is init of its PID namespace: killing it kills every
	// process in the namespace. The process group catches the rest when the
	// policy runs without a PID namespace.
	syscall.Kill(-h.proc.Pid, syscall.SIGKILL)
	h.proc.Kill()
}

// wait waits for the helper to end, reaps it and sets h.state; the error
// is os/exec's for a helper that did not exit 0.
func (h *helperProc) wait() error {
	if h.release != nil {
		defer h.release() // reaped
	}
	if h.cmd != nil {
		err := h.cmd.Wait()
		h.state = h.cmd.ProcessState
		return err
	}
	st, err := h.proc.Wait()
	if err != nil {
		return err
	}
	h.state = st
	if !st.Success() {
		return &exec.ExitError{ProcessState: st}
	}
	return nil
}

// discard kills an unclaimed helper, reaps it and closes its pipes.
func (h *helperProc) discard() {
	h.kill()
	h.wait()
	h.closeAll()
}

// exited reports whether the helper has ended (without reaping it).
func (h *helperProc) exited() bool { return exited(h.proc.Pid) }

// copyStreams starts copying the command's standard streams: stdin into
// the helper's pipe (when the shape has one), its stdout and stderr into
// the capped buffers. await waits for the copies the way os/exec does
// with a WaitDelay: after delay it closes the pipes and waits for the
// copies to notice.
func (h *helperProc) copyStreams(stdin io.Reader, stdout, stderr io.Writer) (await func(delay time.Duration)) {
	n := 2
	done := make(chan struct{}, 3)
	if h.stdinW != nil {
		n++
		in := h.stdinW
		go func() {
			if stdin != nil {
				io.Copy(in, stdin)
			}
			in.Close()
			done <- struct{}{}
		}()
	}
	for _, c := range []struct {
		w io.Writer
		r *os.File
	}{{stdout, h.stdoutR}, {stderr, h.stderrR}} {
		go func() {
			io.Copy(c.w, c.r)
			c.r.Close()
			done <- struct{}{}
		}()
	}
	return func(delay time.Duration) {
		wait := func() {
			for ; n > 0; n-- {
				<-done
			}
		}
		t := time.NewTimer(delay)
		defer t.Stop()
		for n > 0 {
			select {
			case <-done:
				n--
			case <-t.C:
				h.closeStreams()
				wait()
			}
		}
		h.closeStreams()
	}
}

// closeStreams closes the parent's ends of the command's standard streams.
func (h *helperProc) closeStreams() {
	for _, f := range []*os.File{h.stdinW, h.stdoutR, h.stderrR} {
		if f != nil {
			f.Close()
		}
	}
}

// enter moves the process pid, with all its threads, into the leaf: under
// v1 into both hierarchies, under v2 into the leaf.
func (lf *leaf) enter(pid int) error {
	b := []byte(strconv.Itoa(pid))
	for _, dir := range uniq(lf.memory, lf.pids) {
		if err := os.WriteFile(dir+"/cgroup.procs", b, 0); err != nil {
			return err
		}
	}
	return nil
}

// The spare pool of a [Native] holds at most one spare per shape, for at
// most NativeOptions.Spares shapes. A run of a shape claims its spare, or waits for
// the one being started; a run of a shape with neither starts cold and
// starts the shape's first spare.
//
// When the next spare starts depends on the pace of the runs. A run that
// finds its spare waiting (the runs are paced, as an agent's tool calls
// are) starts the next one when it ends, after its result, so that
// nothing of the successor runs beside it: its fork of this process and
// the Go runtime's start cost several milliseconds of processor, and on
// two cores that was most of the spawn's tail. A run that has to wait for
// its spare, or finds none, comes faster than spares start: it starts the
// next one at its claim, beside itself, so that runs back to back find
// their spare well under way. (Starting only at the claim gave a spare
// run 4.8-5.7 ms p50 with think time between runs against 6.2-11.7 for
// starting after the run, and starting only after the run made runs back
// to back nearly as slow as cold ones.)
//
// Every spare is forked from a goroutine of its own that is never locked
// to its thread, so the thread outlives the spare in practice: the
// spare's Pdeathsig fires when the forking thread ends, which the Go
// runtime does only for a thread locked by a goroutine that ended. Should
// some other code of the program do that on a thread that forked a spare,
// the spare dies, the claim sees it and the run starts cold.
type sparePool struct {
	// max is how many shapes keep a spare (NativeOptions.Spares), idle
	// how long a spare waits (NativeOptions.Idle, defaulted); hooks are a
	// test's (nil otherwise). All three are set before the first run.
	max   int
	idle  time.Duration
	hooks *nativeHooks
	// program is the helper program (NativeOptions.Helper); empty means
	// this program, re-executed. Set before the first run. fk is the
	// forker that starts its helpers (see usesForker): that program in
	// its forker mode.
	program string
	fk      forker

	mu     sync.Mutex
	ready  bool // slots and settled made
	closed bool // by Native.Close: no more spares
	slots  map[helperShape]*spareSlot
	seq    uint64
	gen    uint64 // bumped by close: older starts discard their spare
	busy   int    // starts, discards and reaps under way, for close to wait on
	// settled is signalled whenever busy drops.
	settled *sync.Cond
}

type spareSlot struct {
	h       *helperProc // the spare waiting for a run (ready), or nil
	timer   *time.Timer // kills h when it idles too long
	pending *helperProc // the spare started but not ready yet, or nil
	// started is closed when the start under way has its helper (pending)
	// or failed; nil when no start is under way.
	started chan struct{}
	used    uint64 // pool.seq at the last claim, for the LRU
}

func (p *sparePool) lockInit() {
	p.mu.Lock()
	if !p.ready {
		p.ready = true
		p.slots = map[helperShape]*spareSlot{}
		p.settled = sync.NewCond(&p.mu)
	}
}

// offLocked reports whether the pool starts no spares: it keeps none, or
// it was closed.
func (p *sparePool) offLocked() bool { return p.max <= 0 || p.closed }

// claim returns the spare of shape sh, or nil when there is none (or
// spares are off). A spare whose fork and exec are under way is waited for
// (they already cost what a cold start would), and one started but not yet
// ready is taken as it is: the run waits for it to be ready (handOver).
// When the spare was not waiting already, claim starts the shape's next
// spare in the background; otherwise the run starts it when it ends
// (refill).
func (p *sparePool) claim(sh helperShape) *helperProc {
	p.lockInit()
	defer p.mu.Unlock()
	if p.offLocked() {
		return nil
	}
	s := p.slots[sh]
	if s == nil {
		s = &spareSlot{}
		p.evictLocked()
		p.slots[sh] = s
	}
	paced := s.h != nil
	if ch := s.started; s.h == nil && s.pending == nil && ch != nil {
		p.mu.Unlock()
		<-ch
		p.mu.Lock()
		if p.slots[sh] != s {
			return nil // closed or evicted meanwhile
		}
	}
	h := s.h
	if h != nil {
		s.h = nil
		s.timer.Stop()
	} else if h = s.pending; h != nil {
		// Taken from its start, which is then over for the slot.
		s.pending = nil
		s.started = nil
	}
	p.seq++
	s.used = p.seq
	if (!paced || p.hooks.refillEagerly()) && s.started == nil && !p.offLocked() {
		p.startLocked(sh, s)
	}
	return h
}

// refill starts the next spare of shape sh in the background unless one is
// waiting or starting, or the shape has no slot (closed or evicted).
func (p *sparePool) refill(sh helperShape) {
	p.lockInit()
	defer p.mu.Unlock()
	if s := p.slots[sh]; s != nil && s.h == nil && s.started == nil && !p.offLocked() {
		p.startLocked(sh, s)
	}
}

// evictLocked makes room for one more shape, discarding the least
// recently used shape's spare.
func (p *sparePool) evictLocked() {
	if len(p.slots) < p.max {
		return
	}
	var oldest helperShape
	least := ^uint64(0)
	for sh, s := range p.slots {
		if s.used < least {
			oldest, least = sh, s.used
		}
	}
	s := p.slots[oldest]
	delete(p.slots, oldest)
	if s.h != nil {
		s.timer.Stop()
		p.discardLocked(s.h)
		s.h = nil
	}
}

// discardLocked discards h in the background, counted in busy.
func (p *sparePool) discardLocked(h *helperProc) { p.backgroundLocked(h.discard) }

// backgroundLocked runs f on a goroutine of its own, counted in busy.
func (p *sparePool) backgroundLocked(f func()) {
	p.busy++
	go func() {
		f()
		p.mu.Lock()
		p.busy--
		p.settled.Broadcast()
		p.mu.Unlock()
	}()
}

// startLocked starts the next spare of slot s in the background.
func (p *sparePool) startLocked(sh helperShape, s *spareSlot) {
	ch := make(chan struct{})
	s.started = ch
	p.busy++
	gen := p.gen
	done := func() {
		p.busy--
		p.settled.Broadcast()
	}
	go func() {
		h, err := startHelper(p, sh, nil)
		p.mu.Lock()
		close(ch)
		if err != nil {
			s.started = nil
			done()
			p.mu.Unlock()
			return // the next claim starts cold and tries again
		}
		s.pending = h // a claim may take it from here
		p.mu.Unlock()
		// A spare is waiting once it is ready.
		err = h.awaitReady()
		p.mu.Lock()
		defer p.mu.Unlock()
		done()
		if s.pending != h {
			return // a claim took it
		}
		s.pending, s.started = nil, nil
		if err != nil || gen != p.gen || p.offLocked() || p.slots[sh] != s {
			p.discardLocked(h)
			return
		}
		s.h = h
		p.hooks.spareStarted(h.proc.Pid)
		idle := p.idle
		if idle <= 0 {
			idle = defaultIdle
		}
		s.timer = time.AfterFunc(idle, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if s.h == h {
				s.h = nil
				p.discardLocked(h)
			}
		})
	}()
}

// close turns the pool off for good, discards every idle spare (its idle
// timer stopped) and waits until no start, discard or background reap is
// under way; the starts under way discard their spares.
func (p *sparePool) close() {
	p.lockInit()
	defer p.mu.Unlock()
	p.closed = true
	p.gen++
	p.fk.close()
	for sh, s := range p.slots {
		if s.h != nil {
			s.timer.Stop()
			p.discardLocked(s.h)
			s.h = nil
		}
		delete(p.slots, sh)
	}
	p.settleLocked()
}

// settle waits until no start, discard or background reap (see
// reapForked) is under way.
func (p *sparePool) settle() {
	p.lockInit()
	defer p.mu.Unlock()
	p.settleLocked()
}

func (p *sparePool) settleLocked() {
	for p.busy > 0 {
		p.settled.Wait()
	}
}

// reapForked kills and reaps, in the background, a helper in fork mode
// that has reported how its command ended, then removes the run's leaf
// (when not nil) and calls giveBack (when not nil): the helper's exit and
// the teardown of its namespaces are not the run's. Counted in the pool's
// busy, so Native.Close waits for it.
func (p *sparePool) reapForked(h *helperProc, lf *leaf, giveBack func()) {
	p.lockInit()
	defer p.mu.Unlock()
	p.backgroundLocked(func() {
		h.kill()
		h.wait()
		if lf != nil {
			lf.remove()
		}
		if giveBack != nil {
			giveBack()
		}
	})
}

// claimSpare claims the spare of shape sh and hands it the run (see
// handOver). It returns nil when there is no spare or the spare is
// unusable: dead (killed from outside, or its forking thread ended), or
// not movable into the leaf. An unusable spare is discarded and the run
// starts cold, in the leaf: a run never goes without the leaf the probe
// promised. setup is what the spare wrote instead of its acknowledgement,
// the start of a setup error.
func (p *sparePool) claimSpare(ctx context.Context, sh helperShape, lf *leaf, raw []byte, tree int, processes int) (h *helperProc, setup []byte) {
	h = p.claim(sh)
	if h == nil {
		return nil, nil
	}
	if h.exited() {
		h.discard()
		return nil, nil
	}
	setup, err := handOver(ctx, h, lf, raw, tree, processes)
	if err != nil {
		h.discard()
		return nil, nil
	}
	return h, setup
}

// handOver hands a started helper its run. Without a cgroup leaf it sends
// the configuration raw at once (the helper reads it when it is ready);
// with one it waits until the helper is ready (helper.Ready), moves it into
// the leaf (the command and every process it starts are then in the leaf
// from their first instruction) with room for the helper's tasks beside
// the command's processes (see leaf.admitHelper), and sends it then. Either
// way it waits for the helper to acknowledge the configuration. When ctx
// ends first the helper is killed. setup is what the helper wrote instead
// of the acknowledgement, the start of a setup error. tree, when not -1,
// is the workspace's detached mount (helper.Config.WorkspaceTree), passed
// on the helper's mount socket just before the configuration; the caller
// keeps it.
//
// Only the acknowledgement makes a spare's life certain: a spare killed
// just before the claim is still there, movable and writable until the
// kernel has finished it, but dies in its read without consuming the
// configuration, so the claim reads end of file instead of helper.Ack.
// Nothing of the run has been read from its stdin or run by then, so the
// cold start that follows loses nothing.
func handOver(ctx context.Context, h *helperProc, lf *leaf, raw []byte, tree int, processes int) (setup []byte, err error) {
	stop := context.AfterFunc(ctx, h.kill)
	defer func() {
		if !stop() && err == nil {
			err = ctx.Err()
		}
	}()
	send := func() error {
		if tree >= 0 {
			if h.mountW == nil {
				return errors.New("send the workspace: the helper has no mount socket")
			}
			if err := unix.Sendmsg(int(h.mountW.Fd()), []byte{0}, unix.UnixRights(tree), nil, unix.MSG_NOSIGNAL); err != nil {
				return fmt.Errorf("send the workspace: %w", err)
			}
		}
		if _, err := h.cfgW.Write(raw); err != nil {
			return fmt.Errorf("send configuration: %w", err)
		}
		h.cfgW.Close()
		h.cfgW = nil
		return nil
	}
	if lf == nil {
		if err := send(); err != nil {
			return nil, err
		}
	}
	if err := h.awaitReady(); err != nil {
		return nil, err
	}
	if lf != nil {
		if err := lf.enter(h.proc.Pid); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		if err := lf.admitHelper(processes); err != nil {
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		if err := send(); err != nil {
			return nil, err
		}
	}
	var b [1]byte
	if n, _ := h.errR.Read(b[:]); n != 1 {
		return nil, errors.New("the helper ended before it read its configuration")
	}
	if b[0] != helper.Ack {
		return []byte{b[0]}, nil
	}
	return nil, nil
}
