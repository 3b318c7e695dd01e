//go:build linux

package callserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
)

func init() {
	if mode, _ := syscall.Getenv(helper.Env); mode != Mode {
		return
	}
	// The server never returns to the program's initialisation. Whatever
	// ends it, killing every other process of the container (init, the
	// engine's tini, excepted) is the last thing it does; tini then exits
	// with it and the container stops. It does so only when it reached its
	// host and is the child of its PID namespace's init, as in the
	// container: the program started by mistake with the server's
	// environment on a host, as root, must not kill every process it may.
	connected, err := serve()
	if connected && os.Getppid() == 1 {
		syscall.Kill(-1, syscall.SIGKILL)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clawtool call server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Capabilities the server needs (linux/capability.h): setting the call's
// user and group, and killing the call's processes, which run as another
// user.
const (
	capKill   = 5
	capSetgid = 6
	capSetuid = 7
)

// Server-side bounds.
const (
	// reapRounds bounds the rounds of killing and reaping after a call:
	// a process forked while the first kill was under way is caught by
	// the next round.
	reapRounds = 1000
	// spareThreads are started, and parked, when the server starts: a
	// fork bomb of a call can exhaust the container's pids limit, and the
	// Go runtime cannot run without a thread when it needs one.
	spareThreads = 4
)

type server struct {
	conn    *net.UnixConn
	base    []string // the environment calls inherit
	devnull *os.File
	oom     counter
	pidsMax counter
	adj     *os.File // /proc/self/oom_score_adj
	adjWas  []byte

	wmu  sync.Mutex
	wbuf []byte

	mu  sync.Mutex
	cur *call
}

type call struct {
	seq    uint32
	stdin  chan []byte   // nil closes the command's input
	ended  chan struct{} // closed when every process of the call is gone
	mu     sync.Mutex
	pid    int
	killed bool
}

// kill kills every process of the container but init and the server: the
// call's whole tree, whatever sessions or groups it made. Calls run one at
// a time, so nothing else is hit.
func (c *call) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killed = true
	if c.pid > 0 {
		syscall.Kill(-1, syscall.SIGKILL)
	}
}

func serve() (connected bool, err error) {
	sock, token := os.Getenv(SocketEnv), os.Getenv(TokenEnv)
	if sock == "" || token == "" {
		return false, errors.New("no socket or token in the environment")
	}
	if err := checkCapabilities(); err != nil {
		return false, err
	}
	spawnSpareThreads()
	// Orphans of a call become the server's children, so that it can
	// reap them and know when every process of a call is gone.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		return false, fmt.Errorf("child subreaper: %w", e)
	}
	s := &server{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name != helper.Env && name != SocketEnv && name != TokenEnv {
			s.base = append(s.base, kv)
		}
	}
	if s.devnull, err = os.Open(os.DevNull); err != nil {
		return false, err
	}
	s.oom = openCounter("oom_kill", "/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")
	s.pidsMax = openCounter("max", "/sys/fs/cgroup/pids.events", "/sys/fs/cgroup/pids/pids.events")
	if f, err := os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0); err == nil {
		buf := make([]byte, 16)
		if n, err := syscall.Pread(int(f.Fd()), buf, 0); err == nil {
			s.adj, s.adjWas = f, bytes.TrimSpace(buf[:n])
		}
	}
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return false, err
	}
	s.conn = conn
	if err := s.send(Hello, EncodeHello(token)); err != nil {
		return true, err
	}
	return true, s.loop()
}

// loop reads the host's frames until the connection ends.
func (s *server) loop() error {
	r := NewReader(s.conn)
	for {
		t, p, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if t == Run {
			q, err := DecodeRequest(p)
			if err != nil {
				return err
			}
			s.mu.Lock()
			busy := s.cur != nil
			c := &call{seq: q.Seq, stdin: make(chan []byte, 1), ended: make(chan struct{})}
			if !busy {
				s.cur = c
			}
			s.mu.Unlock()
			if busy {
				return errors.New("a call was sent while another runs")
			}
			go s.run(c, q)
			continue
		}
		seq, rest, err := SplitSeq(p)
		if err != nil {
			return err
		}
		s.mu.Lock()
		c := s.cur
		s.mu.Unlock()
		if c != nil && c.seq != seq {
			c = nil // a late frame of an ended call
		}
		switch t {
		case Kill:
			if c != nil {
				c.kill()
			}
		case Stdin, StdinEOF:
			if len(rest) > Chunk || t == StdinEOF && len(rest) != 0 {
				return fmt.Errorf("%w: %d bytes of input in one frame", ErrFrame, len(rest))
			}
			if c == nil {
				continue
			}
			var data []byte
			if t == Stdin {
				data = append(make([]byte, 0, len(rest)), rest...)
			}
			select {
			case c.stdin <- data:
			default:
				return fmt.Errorf("%w: input sent before the last was acknowledged", ErrFrame)
			}
		default:
			return fmt.Errorf("%w: unknown frame type %q", ErrFrame, t)
		}
	}
}

func (s *server) send(t byte, parts ...[]byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf = Append(s.wbuf[:0], t, parts...)
	_, err := s.conn.Write(s.wbuf)
	return err
}

// end marks the call over, so that the next Run is accepted, and sends
// its last frame.
func (s *server) end(c *call, t byte, payload []byte) {
	s.mu.Lock()
	s.cur = nil
	s.mu.Unlock()
	s.send(t, payload)
}

func (s *server) run(c *call, q Request) {
	seq := Seq(c.seq)
	env := mergeEnv(s.base, q.Env)
	path, err := lookPath(q.Argv[0], env)
	if err != nil {
		s.end(c, Failed, EncodeFailed(c.seq, FailedNotFound, err.Error()))
		return
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		s.end(c, Failed, EncodeFailed(c.seq, FailedOther, err.Error()))
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		s.end(c, Failed, EncodeFailed(c.seq, FailedOther, err.Error()))
		return
	}
	in, inW := s.devnull, (*os.File)(nil)
	if q.Stdin {
		if in, inW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			errR.Close()
			errW.Close()
			s.end(c, Failed, EncodeFailed(c.seq, FailedOther, err.Error()))
			return
		}
	}
	before := [2]uint64{s.oom.read(), s.pidsMax.read()}
	// The call's processes inherit the highest OOM score, so that the
	// kernel kills them, not the server, at the container's memory limit.
	s.setAdj([]byte("1000"))
	pid, err := syscall.ForkExec(path, q.Argv, &syscall.ProcAttr{
		Dir:   q.Dir,
		Env:   env,
		Files: []uintptr{in.Fd(), outW.Fd(), errW.Fd()},
		Sys: &syscall.SysProcAttr{
			Setsid:     true,
			Credential: &syscall.Credential{Uid: q.UID, Gid: q.GID, Groups: []uint32{}},
		},
	})
	s.setAdj(s.adjWas)
	outW.Close()
	errW.Close()
	if inW != nil {
		in.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if inW != nil {
			inW.Close()
		}
		reason := FailedOther
		if errors.Is(err, syscall.ENOENT) {
			reason = FailedNotFound
		}
		s.end(c, Failed, EncodeFailed(c.seq, reason, "exec "+q.Argv[0]+": "+err.Error()))
		return
	}
	c.mu.Lock()
	c.pid = pid
	if c.killed {
		syscall.Kill(-1, syscall.SIGKILL)
	}
	c.mu.Unlock()
	s.send(Started, seq, Seq(uint32(pid)))

	var pumps sync.WaitGroup
	for _, p := range []struct {
		r *os.File
		t byte
	}{{outR, Stdout}, {errR, Stderr}} {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			buf := make([]byte, Chunk)
			for {
				n, err := p.r.Read(buf)
				if n > 0 {
					s.send(p.t, seq, buf[:n])
				}
				if err != nil {
					return
				}
			}
		}()
	}
	stdinDone := make(chan struct{})
	if inW != nil {
		go s.feed(c, inW, seq, stdinDone)
	} else {
		close(stdinDone)
	}

	var ws syscall.WaitStatus
	var ru syscall.Rusage
	flags := uint32(0)
	for {
		wpid, err := syscall.Wait4(-1, &ws, 0, &ru)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			// Cannot happen while pid is a child; retire the server.
			ws, flags = syscall.WaitStatus(syscall.SIGKILL), ExitLeftover
		}
		if err != nil || wpid == pid {
			break
		}
	}
	// Whatever the command left behind dies with it.
	syscall.Kill(-1, syscall.SIGKILL)
	if !reapAll() {
		flags |= ExitLeftover
		outR.Close() // a survivor may hold the pipes
		errR.Close()
	}
	pumps.Wait()
	outR.Close()
	errR.Close()
	close(c.ended)
	<-stdinDone
	if s.oom.read() > before[0] {
		flags |= ExitOOM
	}
	if s.pidsMax.read() > before[1] {
		flags |= ExitPIDsMax
	}
	if nearCPULimit() {
		flags |= ExitRetire
	}
	e := Exit{Seq: c.seq, Status: uint32(ws), CPU: uint64(ru.Utime.Nano() + ru.Stime.Nano()), Flags: flags}
	s.end(c, Exited, e.Encode())
}

// feed writes the call's input chunks to the command and acknowledges
// each, until the host closes the input or the call ends.
func (s *server) feed(c *call, w *os.File, seq []byte, done chan struct{}) {
	defer close(done)
	defer w.Close()
	for {
		select {
		case data := <-c.stdin:
			if data == nil {
				return
			}
			w.Write(data) // a command that stopped reading gets the rest dropped
			s.send(StdinAck, seq)
		case <-c.ended:
			return
		}
	}
}

// reapAll kills and reaps until the server has no child left, and reports
// whether it got there within reapRounds.
func reapAll() bool {
	var ws syscall.WaitStatus
	for round := range reapRounds {
		for {
			wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.ECHILD {
				return true
			}
			if err != nil || wpid <= 0 {
				break
			}
		}
		syscall.Kill(-1, syscall.SIGKILL)
		// A killed process needs the scheduler to die: wait a little,
		// longer each round, at most 5ms.
		time.Sleep(min(50*time.Microsecond<<min(round, 7), 5*time.Millisecond))
	}
	return false
}

func (s *server) setAdj(v []byte) {
	if s.adj != nil {
		syscall.Pwrite(int(s.adj.Fd()), v, 0)
	}
}

// nearCPULimit reports whether the server has used half of its
// RLIMIT_CPU, which it shares with every call (each call's own count
// starts at zero).
func nearCPULimit() bool {
	var lim syscall.Rlimit
	var ru syscall.Rusage
	if syscall.Getrlimit(syscall.RLIMIT_CPU, &lim) != nil || syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return false
	}
	return halfUsed(time.Duration(ru.Utime.Nano()+ru.Stime.Nano()), lim.Cur)
}

// halfUsed reports whether used is at least half of a limit of seconds
// seconds; a limit above 2^32 seconds (RLIM_INFINITY included) never is.
func halfUsed(used time.Duration, seconds uint64) bool {
	if seconds > 1<<32 {
		return false
	}
	return used >= time.Duration(seconds)*time.Second/2
}

// counter reads one "key N" line of a cgroup file.
type counter struct {
	f   *os.File
	key string
}

func openCounter(key string, paths ...string) counter {
	for _, p := range paths {
		if f, err := os.Open(p); err == nil {
			return counter{f: f, key: key}
		}
	}
	return counter{}
}

func (c counter) read() uint64 {
	if c.f == nil {
		return 0
	}
	var buf [1024]byte
	n, err := syscall.Pread(int(c.f.Fd()), buf[:], 0)
	if err != nil || n <= 0 {
		return 0
	}
	for line := range strings.SplitSeq(string(buf[:n]), "\n") {
		if v, ok := strings.CutPrefix(line, c.key+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// checkCapabilities makes sure the server can do its work before it
// accepts any: without these the host falls back to the engine's exec.
func checkCapabilities() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return err
			}
			for _, c := range []uint{capKill, capSetgid, capSetuid} {
				if eff&(1<<c) == 0 {
					return fmt.Errorf("capability %d is missing (effective set %#x)", c, eff)
				}
			}
			return nil
		}
	}
	return errors.New("no CapEff in /proc/self/status")
}

// spawnSpareThreads makes the runtime start threads now and park them,
// for later use when creating one could fail.
func spawnSpareThreads() {
	var ready, release sync.WaitGroup
	release.Add(1)
	for range spareThreads {
		ready.Add(1)
		go func() {
			runtime.LockOSThread()
			ready.Done()
			release.Wait()
			runtime.UnlockOSThread()
		}()
	}
	ready.Wait()
	release.Done()
}

// mergeEnv returns base with add's variables added, replacing those of the
// same name.
func mergeEnv(base, add []string) []string {
	out := make([]string, 0, len(base)+len(add))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for _, a := range add {
			if n, _, _ := strings.Cut(a, "="); n == name {
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}

// errNotFound ends the error for a command not in the PATH.
const errNotFound = "executable file not found in the container's PATH"

// lookPath finds file in the PATH of env, as the shell would.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	list := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			list = v
		}
	}
	for dir := range strings.SplitSeq(list, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + file
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Mode&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(file + ": " + errNotFound)
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36
