package sandbox

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"golang.org/x/sys/unix"
)

// A forker is the helper program started once, in its forker mode (see
// helper.ForkerMode), to start the helpers of a [Native]: the program
// NativeOptions.Helper names, or, by default, this program re-executed
// (freshly exec'd, its address space is a fraction of this one's however
// large this one has grown). Go's os/exec clones a helper into a new
// user namespace without sharing the parent's memory, copying its page
// tables, which from a large program running the sandbox cost more than
// the rest of the clone; the forker's are a fraction of those, and on
// amd64 the forker copies none (its clone shares its memory, see
// helper.startHelper). The helpers it starts are this process's
// children (CLONE_PARENT): they are waited for, reaped, killed and
// charged as the helpers started here are.
//
// It is started at the first helper that needs it and lives until
// Native.Close (or the program's end: its parent death signal), or until
// it has had no request for the backend's idle time (NativeOptions.Idle,
// as a spare): it is then stopped under the lock requests hold, so that
// none is under way, and the next start starts another, as after its
// death. The helpers it started are this process's children and do not
// notice. When it has died, the next start starts another; a start it
// fails (it died during the request, did not answer in time, answered
// other than the protocol says) fails its run with the reason, and the
// forker is killed so that the next start has a fresh one, and the helper
// it may have cloned for the request is killed and reaped (see
// reapOrphans). Nothing falls back to another way of starting the helper.
//
// A helper's parent death signal fires when the thread of this process
// that started the forker ends (the helper's parent is that thread, as
// the forker's is), which the Go runtime does only for a thread locked by
// a goroutine that ended: the forker is started from the unlocked
// goroutine of a run or a spare start, so that thread outlives it in
// practice, as the spares' forking threads do (see sparePool).
type forker struct {
	// program is the forker's program: NativeOptions.Helper, or empty
	// for this program (selfProgram).
	program string
	// timeout bounds a request and its answer; the greeting at the start
	// too; 0 means forkerTimeout. A test may shorten it.
	timeout time.Duration
	// idle is how long the forker may go without a request before it is
	// stopped; 0 means defaultIdle.
	idle time.Duration
	// after arms the idle timer: it calls fn after d and returns what
	// stops it. nil means time.AfterFunc; a test sets its own clock.
	after func(d time.Duration, fn func()) (stop func() bool)
	// startHere starts the forker from the calling goroutine's thread,
	// as before it was started from the spawning thread (a test's
	// control; see onSpawnThread).
	startHere bool

	mu   sync.Mutex
	cmd  *exec.Cmd // nil when none runs
	conn *net.UnixConn
	// release gives up the spawning thread's hold for the forker that
	// runs (see spawn); nil when none runs or it was started here.
	release func()
	closed  bool // by Native.Close: start no more forkers
	// stopIdle stops the idle timer armed after the last request, if
	// any; idleGen tells that timer from those armed before it.
	stopIdle func() bool
	idleGen  uint64
}

// forkerTimeout is a forker's default timeout.
const forkerTimeout = 10 * time.Second

// selfProgram is this program, for a helper or a forker that is this
// program re-executed: the file this process runs, even when its path was
// replaced or removed since it started.
const selfProgram = "/proc/self/exe"

// limit returns f's timeout.
func (f *forker) limit() time.Duration {
	if f.timeout <= 0 {
		return forkerTimeout
	}
	return f.timeout
}

// errForkerClosed is what a start asking a closed forker gets; the caller
// starts the helper itself then (after Native.Close, runs start cold).
var errForkerClosed = errors.New("the forker was closed")

// start asks the forker for a helper of shape sh with the descriptors
// fds (see helper.ForkRequest) and returns the helper's process, and the
// function that gives up the spawning thread's hold for it (see
// holdSpawnThread), to be called once it has been reaped.
func (f *forker) start(sh helperShape, bits uint8, uid, gid int, fds []*os.File) (*os.Process, func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.armIdleLocked()
	if f.closed {
		return nil, nil, errForkerClosed
	}
	if f.cmd != nil && exited(f.cmd.Process.Pid) {
		f.stopLocked()
	}
	if f.cmd == nil {
		if err := f.launchLocked(); err != nil {
			return nil, nil, fmt.Errorf("start the forker: %w", err)
		}
	}
	var tag [8]byte
	rand.Read(tag[:]) // never fails (crypto/rand)
	req := helper.ForkRequest{Flags: uint64(sh.flags), UID: uint32(uid), GID: uint32(gid), Bits: bits, Tag: binary.LittleEndian.Uint64(tag[:])}
	name := helper.CloneName(req.Tag)
	raw := make([]int, len(fds))
	for i, fd := range fds {
		raw[i] = int(fd.Fd())
	}
	reply, err := f.askLocked(req.Encode(), unix.UnixRights(raw...))
	cfg := fds[2] // the configuration pipe's read end, see helper.ForkRequest
	if err != nil {
		f.failLocked(cfg, name)
		return nil, nil, fmt.Errorf("the forker failed (it was killed; the next run starts another): %w", err)
	}
	switch {
	case len(reply) == 5 && reply[0] == helper.ForkStarted:
		pid := int(uint32(reply[1]) | uint32(reply[2])<<8 | uint32(reply[3])<<16 | uint32(reply[4])<<24)
		if pid <= 0 || !isChild(pid) {
			f.failLocked(cfg, name)
			return nil, nil, fmt.Errorf("the forker answered process %d, which is not a helper of this program's (it was killed; the next run starts another)", pid)
		}
		// Not reaped by anyone else, the child keeps its id until it is
		// waited for: FindProcess finds this one.
		proc, err := os.FindProcess(pid)
		if err != nil {
			return nil, nil, err
		}
		// The helper is the child of the thread that started the forker
		// (CLONE_PARENT): held while the forker is, so the same thread.
		release := func() {}
		if f.release != nil {
			release = holdSpawnThread()
		}
		return proc, release, nil
	case len(reply) > 0 && reply[0] == helper.ForkRefused:
		// A clone that failed (on the id maps, at its exec) is this
		// process's child, which the forker cannot reap.
		reapOrphans(f.cmd.Process.Pid, cfg, name)
		return nil, nil, fmt.Errorf("the forker refused: %s", reply[1:])
	}
	f.failLocked(cfg, name)
	return nil, nil, errors.New("the forker answered other than its protocol says (it was killed; the next run starts another)")
}

// failLocked kills and reaps the forker that failed a request whose
// configuration pipe's read end is cfg and whose clone was named name,
// then the helper it may have cloned for it (see reapOrphans).
func (f *forker) failLocked(cfg *os.File, name string) {
	fk := f.cmd.Process.Pid
	f.stopLocked()
	reapOrphans(fk, cfg, name)
}

// reapOrphans kills and reaps the helpers that the forker fk (its process
// id) cloned for a request but whose process ids never arrived here: a
// forker that died or failed between its clone and its answer, or whose
// clone failed before its exec. The clones are this process's children
// (CLONE_PARENT), so nobody else reaps them: each would stay a zombie
// until the program ends. They are told from any other child of the
// program by what only they have: the forker's session, which a clone
// keeps until its setsid (one that failed or waits on its id maps); the
// request's configuration pipe (cfg, its read end) among their
// descriptors (one past its setsid: it holds the pipe, and waits on it
// once it runs as the helper while the caller keeps the write end open);
// or the name the forker gave the request's clone (name, see
// helper.CloneName), which it keeps until its exec (one whose exec failed
// after its setsid: a zombie in a session of its own, holding nothing).
// The forker itself, in its own session, is not one of them.
func reapOrphans(fk int, cfg *os.File, name string) {
	var st unix.Stat_t
	pipe := ""
	if unix.Fstat(int(cfg.Fd()), &st) == nil {
		pipe = fmt.Sprintf("pipe:[%d]", st.Ino)
	}
	me := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == fk {
			continue
		}
		ppid, sid, comm, ok := procStat(pid)
		if !ok || ppid != me || (sid != fk && !holds(pid, pipe) && (name == "" || comm != name)) {
			continue
		}
		unix.Kill(pid, unix.SIGKILL)
		for {
			if _, err := unix.Wait4(pid, nil, 0, nil); err != unix.EINTR {
				break
			}
		}
	}
}

// procStat returns the parent, the session and the name (comm) of
// process pid, a zombie's too.
func procStat(pid int) (ppid, sid int, comm string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, "", false
	}
	// pid (comm) state ppid pgrp session ...: comm may hold anything.
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return 0, 0, "", false
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 4 {
		return 0, 0, "", false
	}
	ppid, err1 := strconv.Atoi(f[1])
	sid, err2 := strconv.Atoi(f[3])
	return ppid, sid, string(b[i+1 : j]), err1 == nil && err2 == nil
}

// holds reports whether process pid has a descriptor linking to target
// (as readlink shows it); false for an empty target.
func holds(pid int, target string) bool {
	if target == "" {
		return false
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == target {
			return true
		}
	}
	return false
}

// askLocked sends one message with the control data oob and returns the
// answer, within the timeout.
func (f *forker) askLocked(msg, oob []byte) ([]byte, error) {
	f.conn.SetDeadline(time.Now().Add(f.limit()))
	if _, _, err := f.conn.WriteMsgUnix(msg, oob, nil); err != nil {
		return nil, fmt.Errorf("send the request: %w", err)
	}
	return f.readLocked()
}

// readLocked reads one message of the forker's, within the deadline set.
func (f *forker) readLocked() ([]byte, error) {
	b := make([]byte, helper.MaxForkReply+1)
	n, oobn, flags, _, err := f.conn.ReadMsgUnix(b, nil)
	switch {
	case err != nil:
		return nil, fmt.Errorf("read its answer: %w", err)
	case oobn != 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || n > helper.MaxForkReply:
		return nil, errors.New("its answer is too large or carries descriptors")
	case n == 0:
		return nil, errors.New("it ended without answering")
	}
	return b[:n], nil
}

// launchLocked starts the forker and reads its greeting.
func (f *forker) launchLocked() (err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "forker"), os.NewFile(uintptr(fds[1]), "forker")
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return err
	}
	program := f.program
	if program == "" {
		program = selfProgram
	}
	cmd := exec.Command(program)
	cmd.Args = []string{"clawtool-sandbox-forker"}
	cmd.Env = []string{helper.Env + "=" + helper.ForkerMode, "GOMAXPROCS=1"}
	// It holds no directory of this program's for its life; its helpers
	// start there too, and enter their own before the command.
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{theirs}
	// Its own session, out of reach of a terminal's signals to this
	// program's group; killed with this program.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	// From the spawning thread: the forker and the helpers it starts die
	// with the thread that started it.
	if f.startHere {
		err = cmd.Start()
	} else {
		f.release, err = spawn(cmd.Start)
	}
	// The forker's end is the forker's alone: its death then ends the
	// socket here.
	theirs.Close()
	if err != nil {
		c.Close()
		return err
	}
	f.cmd, f.conn = cmd, c.(*net.UnixConn)
	f.conn.SetDeadline(time.Now().Add(f.limit()))
	hello, err := f.readLocked()
	if err == nil {
		if why := helper.ForkerHelloOK(hello); why != "" {
			err = errors.New(why)
		}
	}
	if err != nil {
		f.stopLocked()
		return err
	}
	return nil
}

// stopLocked kills and reaps the forker, if one runs.
func (f *forker) stopLocked() {
	if f.cmd == nil {
		return
	}
	f.conn.Close()
	f.cmd.Process.Kill()
	f.cmd.Wait()
	if f.release != nil {
		f.release()
	}
	f.cmd, f.conn, f.release = nil, nil, nil
}

// armIdleLocked stops the idle timer armed before and, when a forker
// runs, arms one that stops it after f's idle time unless another request
// came meanwhile.
func (f *forker) armIdleLocked() {
	if f.stopIdle != nil {
		f.stopIdle()
		f.stopIdle = nil
	}
	f.idleGen++ // a timer armed before, already firing, finds it changed
	if f.cmd == nil || f.closed {
		return
	}
	gen, d := f.idleGen, f.idle
	if d <= 0 {
		d = defaultIdle
	}
	after := f.after
	if after == nil {
		after = func(d time.Duration, fn func()) func() bool { return time.AfterFunc(d, fn).Stop }
	}
	f.stopIdle = after(d, func() { f.idleExpired(gen) })
}

// idleExpired stops the forker when the timer armed as gen is still the
// last one: no request came since it was armed.
func (f *forker) idleExpired(gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.idleGen || f.closed {
		return
	}
	f.stopIdle = nil
	f.stopLocked()
}

// close stops the forker for good.
func (f *forker) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.armIdleLocked() // stops the timer, arms none
	f.stopLocked()
}

// pid returns the forker's process id, or 0 when none runs.
func (f *forker) pid() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cmd == nil {
		return 0
	}
	return f.cmd.Process.Pid
}

// exited reports whether this process's child pid has ended (without
// reaping it).
func exited(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil {
		return !errors.Is(err, unix.EINTR)
	}
	// Linux sets si_signo to SIGCHLD when it found the child waitable and
	// leaves it zero when WNOHANG found nothing.
	return info.Signo != 0
}

// isChild reports whether pid is a child of this process, ended or not.
func isChild(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}

// configure sets what the options o say, before the first run.
func (p *sparePool) configure(o NativeOptions) {
	p.max, p.idle, p.program = o.Spares, o.Idle, o.Helper
	p.fk.program, p.fk.idle = o.Helper, o.Idle
}

// forkerBits returns the request bits of a helper of shape sh.
func forkerBits(sh helperShape, stdin, mount, trace bool) uint8 {
	var b uint8
	if sh.mounts {
		b |= helper.ForkMounts
		if sh.fork {
			b |= helper.ForkFork
		}
	}
	if os.Geteuid() == 0 {
		b |= helper.ForkSetgroups
	}
	if stdin {
		b |= helper.ForkStdin
	}
	if mount {
		b |= helper.ForkMountFD
	}
	if trace {
		b |= helper.ForkTraceFD
	}
	return b
}

// usesForker reports whether a helper of shape sh is started by the
// forker: a test did not turn the forker off (nativeHooks.directStart),
// and the helper gets new user and PID namespaces (without them the clone
// shares this program's memory and costs little). It is so with a helper
// program and without one (the forker is then this program re-executed).
func (p *sparePool) usesForker(sh helperShape) bool {
	const ns = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID
	return !p.hooks.noForker() && sh.flags&ns == ns
}
