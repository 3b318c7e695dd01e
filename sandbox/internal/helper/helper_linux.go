package helper

import (
	"runtime"
	"syscall"
	"unsafe"
)

func init() {
	switch mode, _ := syscall.Getenv(Env); mode {
	case "":
		return
	case "hold":
		// Holds its namespaces (the supervisor opens them) until its
		// standard input ends.
		var b [1]byte
		for {
			if n, err := read(0, b[:]); n == 0 && err != syscall.EINTR {
				syscall.Exit(0)
			}
		}
	case ForkerMode:
		serveForker()
	case "probe":
		if _, err := childProc(""); err != nil {
			syscall.Exit(ExitProbeNoFork)
		}
		syscall.Exit(0)
	case "1":
		// Credentials, Landlock, seccomp, no_new_privs and the PID
		// namespace of its children are per thread: the helper builds
		// everything on this one and starts the command from it.
		pinThread()
		// Nothing it was passed beyond its own descriptors is its: a
		// spare would hold such a descriptor for as long as it waits (the
		// command never gets one, see run's close_range).
		closeStrays(TraceFD + 1)
		err := run()
		write(ErrorFD, []byte(err.Error()))
		syscall.Exit(ExitSetup)
	}
}

// pinThread locks the helper's goroutine to its thread with the program's
// own lock (runtime.LockOSThread), beside the runtime's for package
// initialisation, which alone keeps the goroutine there. Pinned so, the
// thread asks the runtime's template thread, which is like the
// process's first, to start any thread the runtime needs while this
// goroutine waits; otherwise it clones the thread itself. It needs one
// when the goroutine, preempted after a raw call that lasted more than a
// monitor tick (the command's run, or any call under load), hands its
// processor to a thread and none is idle; cloned from this thread once
// it has entered the command's PID namespace for its children (fork
// mode), the thread fails (EINVAL) and the runtime aborts ("runtime/cgo:
// pthread_create failed"). See TestThreadsAfterPIDNamespace. In a
// program without cgo this starts the template thread, before the helper
// is ready, so the run counts it.
func pinThread() { runtime.LockOSThread() }

// NotFound ends the error a helper reports when the command is not in the
// PATH of its environment.
const NotFound = "executable file not found in the sandbox's PATH"

// A stageError names the step of the helper that failed.
type stageError struct {
	stage string
	err   error
}

func (e *stageError) Error() string { return e.stage + ": " + e.err.Error() }

func fail(stage string, err error) error { return &stageError{stage, err} }

type textError string

func (e textError) Error() string { return string(e) }

func run() error {
	started := monotonic()
	// The part of the root that is the same for every run is built before
	// the configuration is read: a spare does it before it is claimed.
	var root *preparedRoot
	var rootErr error
	if v, _ := syscall.Getenv(PrepareRootEnv); v == "1" {
		fork, _ := syscall.Getenv(ForkEnv)
		root, rootErr = prepareRoot(fork == "1")
	}
	prepared := monotonic()
	// Its runtime has started its threads and the root is prepared: from
	// here until the configuration arrives the helper starts nothing (its
	// reads are raw), so a run may count its tasks (see Ready).
	write(ErrorFD, []byte{Ready})
	var c *Config
	trace := func() {}
	{
		raw, err := readConfig()
		if err != nil {
			return fail("read configuration", err)
		}
		write(ErrorFD, []byte{Ack})
		if !SameProtocol(raw) {
			return textError("decode configuration: this helper program was built from other sources than the sandbox that started it (its protocol is " + protocol + "); build it from the same version of the module")
		}
		var ok bool
		if c, ok = Decode(raw); !ok {
			return textError("decode configuration: malformed")
		}
		if c.Trace {
			trace = func() { writeTime(TraceFD, monotonic()) }
			writeTime(TraceFD, started)
			writeTime(TraceFD, prepared)
			trace()
		}
	}
	if rootErr != nil {
		return rootErr
	}
	if len(c.Argv) == 0 {
		return textError("no command")
	}
	if c.Has(MountNS) != (root != nil) {
		return textError("the configuration and " + PrepareRootEnv + " disagree on the mount namespace")
	}
	if root != nil && root.childNS >= 0 && c.NProc != 0 {
		// RLIMIT_NPROC counts the tasks of the sandbox's user, the
		// helper's threads among them while it waits for the command: the
		// command gets the processes the limit promises. Counted before
		// the pivot, while the host's /proc shows the helper.
		n, err := ownThreads()
		if err != nil {
			return fail("count the helper's threads", err)
		}
		c.NProc += n
	}
	tree := -1
	if c.WorkspaceTree {
		if root == nil || c.Workspace == "" {
			return textError("a workspace tree without a root to attach it to")
		}
		var err error
		if tree, err = recvFD(MountFD); err != nil {
			return fail("receive the workspace", err)
		}
	}
	budget := -1
	if c.Budget != 0 && c.Workspace != "" {
		if root == nil {
			return textError("a workspace write budget without a root to mount it in")
		}
		var err error
		if budget, err = budgetTmpfs(c.Budget); err != nil {
			closeFD(tree)
			return fail("workspace write budget", err)
		}
		// The supervisor applies the upper layer after the run from this
		// copy of the descriptor; the helper's copy is closed by
		// finishRoot once the overlay holds the tmpfs.
		if err := sendFD(MountFD, 2, budget); err != nil {
			closeFD(tree)
			closeFD(budget)
			return fail("workspace write budget: send the tmpfs", err)
		}
	}
	if c.ProxyPort != 0 {
		if err := proxyListener(int(c.ProxyPort)); err != nil {
			return fail("listen for the proxy", err)
		}
	}
	closeFD(MountFD)
	if root != nil {
		if err := finishRoot(c, root, tree, budget); err != nil {
			return err
		}
	}
	if c.Has(UTSNS) {
		// The host's name stays the host's.
		if err := sethostname("sandbox"); err != nil {
			return fail("set host name", err)
		}
	}
	dir := "/tmp"
	if c.Workspace != "" {
		dir = c.Workspace
	}
	if err := chdir(dir); err != nil {
		return fail("enter "+dir, err)
	}
	trace()
	if root != nil && root.childNS >= 0 {
		// From here this thread's children are born in the command's PID
		// namespace (entering it takes the capabilities dropped next).
		// The helper starts no other child, and its runtime no thread from
		// this one.
		if _, err := sys(sysSetns, uintptr(root.childNS), syscall.CLONE_NEWPID); err != nil {
			return fail("enter the command's PID namespace", err)
		}
	}
	if c.Has(UserNS) {
		if err := shareUserCounts(c); err != nil {
			return fail("bound the user namespace's share of its owner's counts", err)
		}
		// The run's cgroup paths are relative to where it is now (its
		// leaf, which the supervisor moved the helper into before it sent
		// the configuration): before, /proc/self/cgroup showed the
		// host's cgroup tree and the leaf's name, which holds the
		// supervisor's process id.
		if _, err := sys(syscall.SYS_UNSHARE, syscall.CLONE_NEWCGROUP); err != nil {
			return fail("new cgroup namespace", err)
		}
		if err := dropCapabilities(); err != nil {
			return fail("drop capabilities", err)
		}
	}
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return fail("no_new_privs", err)
	}
	trace()
	if c.Has(Landlock) {
		if err := applyLandlock(c); err != nil {
			return fail("landlock", err)
		}
	}
	trace()
	if c.Has(Rlimits) {
		// 1, not 0: the kernel ignores the core limit when
		// kernel.core_pattern is a pipe (apport, systemd-coredump: a
		// root handler in the initial namespaces), except the value 1,
		// its guard against recursive crashes; below a page it makes
		// no core file either. Set before the seccomp filter, which
		// keeps the run (and so the helper after it) from setting it.
		if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{Cur: 1, Max: 1}); err != nil {
			return fail("rlimits: core", err)
		}
	}
	if c.Has(Seccomp) {
		if err := applySeccomp(c.Seccomp); err != nil {
			return fail("seccomp", err)
		}
	}
	trace()
	if c.Has(Rlimits) {
		if err := applyRlimits(c); err != nil {
			return err
		}
	}
	if err := closeRange(3, ^uint(0), closeRangeCloexec); err != nil {
		return fail("close descriptors", err)
	}
	trace()
	path, err := lookPath(c.Argv[0], c.Env)
	if err != nil {
		return err
	}
	argv, err := cstrs(c.Argv)
	if err != nil {
		return fail("exec "+c.Argv[0], err)
	}
	envv, err := cstrs(c.Env)
	if err != nil {
		return fail("exec "+c.Argv[0], err)
	}
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return fail("exec "+c.Argv[0], err)
	}
	trace()
	if root != nil && root.childNS >= 0 {
		return forkCommand(p, argv, envv, c)
	}
	// A raw execve: syscall.Exec would put back the soft RLIMIT_NOFILE the
	// Go runtime found at start, undoing Limits.OpenFiles.
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fail("exec "+c.Argv[0], errno)
}

// forkCommand starts the command as the helper's child (fork mode, see
// ForkEnv), in the PID namespace run entered for its children, waits for
// it and reports how it ended on ErrorFD. The child is cloned from this
// thread, with its credentials, Landlock domain, seccomp filter and
// no_new_privs; rlimits are the process's, already set. From the clone
// to the record the helper makes raw system calls only (see
// startCommand): the process limit counts the helper's threads as they
// were when the run admitted it, and a thread its runtime started later
// would be refused by the limit the command may have filled, which the
// runtime does not survive.
func forkCommand(path *byte, argv, envv []*byte, c *Config) error {
	// Nothing of the command's reaches the helper (it is outside the
	// command's PID namespace); not dumpable all the same.
	if err := prctl(prSetDumpable, 0, 0); err != nil {
		return fail("dumpable", err)
	}
	pid, err := startCommand(path, argv, envv)
	if err != nil {
		return fail("exec "+c.Argv[0], err)
	}
	started := monotonic()
	// The command's streams end with the command and its descendants.
	for fd := range 3 {
		closeFD(fd)
	}
	var status syscall.WaitStatus
	var ru syscall.Rusage
	// Raw: the Go scheduler, not told of the wait, starts no thread to
	// run other goroutines (there are none) while it lasts.
	if err := wait4(pid, &status, &ru); err != nil {
		return fail("wait for the command", err)
	}
	if c.Trace {
		writeTime(TraceFD, started)
		writeTime(TraceFD, monotonic())
		closeFD(TraceFD) // before the record, so the trace ends with the run
	}
	e := Exit{Status: uint32(status), User: uint64(ru.Utime.Nano()), Sys: uint64(ru.Stime.Nano())}
	// What the run left of its write budget in /tmp, for the outcome.
	// (Raw as well, though the command has ended: TestForkCommandRaw
	// holds every call from here to the record to the rule.)
	var fs syscall.Statfs_t
	if tmp, err := ptr("/tmp"); err == nil && statfs(tmp, &fs) == nil {
		e.TmpFree, e.TmpSize, e.TmpInodes = uint64(fs.Bavail)*uint64(fs.Bsize), uint64(fs.Blocks)*uint64(fs.Bsize), uint64(fs.Ffree)
	}
	write(ErrorFD, e.Encode())
	syscall.Exit(0)
	return nil
}

// wait4 waits for the child pid to end, raw.
func wait4(pid int, status *syscall.WaitStatus, ru *syscall.Rusage) error {
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_WAIT4, uintptr(pid), uintptr(unsafe.Pointer(status)), 0,
			uintptr(unsafe.Pointer(ru)), 0, 0)
		if e != syscall.EINTR {
			return errnoErr(e)
		}
	}
}

// startCommand forks a child of this thread that executes path with argv
// and envv (both ending with nil), and returns its process id once it has
// (or the error its execve returned, the child reaped), with raw system
// calls only. syscall.ForkExec would do, but it reads the report of the
// child's execve through syscall.Syscall, after the execve: when the
// kernel preempts the helper in that read for longer than a tick of the
// runtime's monitor (as it does under load), the runtime, with
// GOMAXPROCS=1, hands the processor to another thread and starts one if
// it has none idle; by then the command runs and may have filled its
// process limit (RLIMIT_NPROC or the leaf's pids.max, both counting the
// helper's threads), the thread's clone fails with EAGAIN, and the
// runtime aborts: the run ended with exit status 2 and no record, under
// a fork bomb at load 30 about once in 180 runs.
//
// All signals are blocked across the clone, so that none runs the
// runtime's handler in the child; the child puts the helper's mask back
// just before its execve (which resets the handlers), the parent right
// after the clone. Standard input, output and error stay open across
// the execve; every other descriptor is close-on-exec (run).
func startCommand(path *byte, argv, envv []*byte) (int, error) {
	var fds [2]int32
	if _, err := sys(syscall.SYS_PIPE2, uintptr(unsafe.Pointer(&fds[0])), syscall.O_CLOEXEC); err != nil {
		return 0, err
	}
	r, w := int(fds[0]), int(fds[1])
	defer closeFD(r)
	for fd := range 3 {
		sys(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0)
	}
	all, old := ^uint64(0), uint64(0)
	if _, err := sys(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8); err != nil {
		closeFD(w)
		return 0, err
	}
	pid, e := forkExec(path, &argv[0], &envv[0], w, &old)
	sys(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(&old)), 0, 8)
	closeFD(w)
	if e != 0 {
		return 0, e
	}
	// The report's pipe is close-on-exec: end of file is the execve's
	// success, four bytes its error.
	var b [4]byte
	n := 0
	for n < len(b) {
		m, err := read(r, b[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || m == 0 {
			break
		}
		n += m
	}
	if n == 0 {
		return pid, nil
	}
	var status syscall.WaitStatus
	var ru syscall.Rusage
	wait4(pid, &status, &ru)
	if n < len(b) {
		return 0, textError("the command's child ended before its execve")
	}
	return 0, syscall.Errno(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
}

// forkExec is the clone of startCommand and what its child does: without
// stack growth or the race detector's calls, neither of which the child
// (on amd64 a thread sharing the helper's memory and stack, see
// cloneCommand; elsewhere a copy of one thread of the helper) could make
// safely. A child sharing the memory first puts every signal the runtime
// handles back to its default action, its own copy of the handlers (no
// CLONE_SIGHAND): a signal delivered between the unblocking and the
// execve would otherwise run the runtime's handler on the helper's memory.
// A handler it cannot read or reset ends the child, as a failed execve
// does.
//
//go:nosplit
//go:norace
func forkExec(path *byte, argv, envv **byte, w int, mask *uint64) (int, syscall.Errno) {
	pid, e := cloneCommand()
	if e != 0 || pid != 0 {
		return int(pid), syscall.Errno(e)
	}
	var errno uintptr
	if sharedMemory {
		errno = defaultHandlers()
	}
	if errno == 0 {
		syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(mask)), 0, 8, 0, 0)
		_, _, en := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(path)),
			uintptr(unsafe.Pointer(argv)), uintptr(unsafe.Pointer(envv)))
		errno = uintptr(en)
	}
	b := [4]byte{byte(errno), byte(errno >> 8), byte(errno >> 16), byte(errno >> 24)}
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(w), uintptr(unsafe.Pointer(&b[0])), 4)
	for {
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 127, 0, 0)
	}
}

// sigaction is the kernel's struct sigaction (rt_sigaction(2)).
type sigaction struct {
	handler, flags, restorer uintptr
	mask                     uint64
}

// defaultHandlers sets every signal with a handler (neither the default
// action nor ignored) back to its default action, as execve would, with
// raw calls only; it returns the first error.
//
//go:nosplit
//go:norace
func defaultHandlers() uintptr {
	const sigDfl, sigIgn = 0, 1
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(syscall.SIGKILL) || sig == uintptr(syscall.SIGSTOP) {
			continue
		}
		var old sigaction
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			return uintptr(e)
		}
		if old.handler == sigDfl || old.handler == sigIgn {
			continue
		}
		act := sigaction{handler: sigDfl}
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			return uintptr(e)
		}
	}
	return 0
}

const sigSetmask = 2 // SIG_SETMASK

// statfs is statfs(2), raw.
func statfs(path *byte, fs *syscall.Statfs_t) error {
	_, err := sys(syscall.SYS_STATFS, uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(fs)))
	return err
}

// ownThreads returns the number of threads of the helper, from
// /proc/self/status.
func ownThreads() (uint64, error) {
	fd, err := openat(atFDCWD, "/proc/self/status", syscall.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer closeFD(fd)
	var buf [4096]byte
	n := 0
	for n < len(buf) {
		m, err := read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	const key = "\nThreads:"
	text := string(buf[:n])
	for i := 0; i+len(key) <= len(text); i++ {
		if text[i:i+len(key)] != key {
			continue
		}
		var v uint64
		j := i + len(key)
		for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
			j++
		}
		start := j
		for ; j < len(text) && text[j] >= '0' && text[j] <= '9'; j++ {
			v = v*10 + uint64(text[j]-'0')
		}
		if j == start || v > 1<<20 {
			break
		}
		return v, nil
	}
	return 0, textError("no thread count in /proc/self/status")
}

func readConfig() ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= MaxConfig {
				return nil, textError("configuration too large")
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := read(ConfigFD, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, err
		case n == 0:
			closeFD(ConfigFD)
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

func monotonic() uint64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return uint64(ts.Nano())
}

// writeTime writes ns to fd as 8 bytes, little endian.
func writeTime(fd int, ns uint64) {
	var b [8]byte
	write(fd, appendLE(b[:0], ns, 8))
}

func cstrs(ss []string) ([]*byte, error) {
	out := make([]*byte, 0, len(ss)+1)
	for _, s := range ss {
		p, err := syscall.BytePtrFromString(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return append(out, nil), nil
}

// lookPath finds file in the PATH of env, as the shell would.
func lookPath(file string, env []string) (string, error) {
	for i := 0; i < len(file); i++ {
		if file[i] == '/' {
			return file, nil
		}
	}
	list := ""
	for _, kv := range env {
		if len(kv) >= 5 && kv[:5] == "PATH=" {
			list = kv[5:]
		}
	}
	for list != "" {
		dir, rest, more := list, "", false
		for i := 0; i < len(list); i++ {
			if list[i] == ':' {
				dir, rest, more = list[:i], list[i+1:], true
				break
			}
		}
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + file
		var st syscall.Stat_t
		if stat(p, &st, false) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && access(p, 1 /* X_OK */) == nil {
			return p, nil
		}
		if !more {
			break
		}
		list = rest
		if list == "" {
			list = "." // a trailing colon names the working directory
		}
	}
	return "", textError("exec " + file + ": " + NotFound)
}

// prctl options (linux/prctl.h).
const (
	prCapbsetDrop   = 24
	prSetSeccomp    = 22
	prSetSecurebits = 28
	prCapAmbient    = 47
	prSetNoNewPrivs = 38
	prSetDumpable   = 4

	prCapAmbientClearAll = 4
	seccompModeFilter    = 2
)

func prctl(option, arg2, arg3 uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, option, arg2, arg3, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// Securebits (linux/securebits.h).
const (
	secbitNoroot                 = 1 << 0
	secbitNorootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
)

// dropCapabilities empties every capability set of this thread for good:
// root in the namespace gains nothing by exec, setuid or ambient raise.
func dropCapabilities() error {
	bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
	if err := prctl(prSetSecurebits, uintptr(bits), 0); err != nil {
		return fail("securebits", err)
	}
	// Capabilities are numbered from 0 without gaps; the first the kernel
	// does not know fails with EINVAL.
	for c := uintptr(0); c < 64; c++ {
		err := prctl(prCapbsetDrop, c, 0)
		if err == syscall.EINVAL && c > 0 {
			break
		}
		if err != nil {
			return fail("bounding set", err)
		}
	}
	if err := prctl(prCapAmbient, prCapAmbientClearAll, 0); err != nil {
		return fail("ambient set", err)
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fail("capset", e)
	}
	return nil
}

func applySeccomp(prog []byte) error {
	if len(prog) == 0 || len(prog)%8 != 0 {
		return textError("empty or malformed filter")
	}
	fprog := syscall.SockFprog{
		Len:    uint16(len(prog) / 8),
		Filter: (*syscall.SockFilter)(unsafe.Pointer(&prog[0])),
	}
	return prctl(prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&fprog)))
}

func applyRlimits(c *Config) error {
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"cpu", syscall.RLIMIT_CPU, c.CPU},
		{"fsize", syscall.RLIMIT_FSIZE, c.FileSize},
		{"nofile", syscall.RLIMIT_NOFILE, c.OpenFiles},
		{"nproc", rlimitNproc, c.NProc},
		{"data", syscall.RLIMIT_DATA, c.Data},
	} {
		if r.v == 0 && (r.res == rlimitNproc || r.res == syscall.RLIMIT_DATA) {
			continue // enforced by the run's cgroup instead
		}
		// syscall.Setrlimit (a raw prlimit) also tells syscall.ForkExec
		// not to put back the soft RLIMIT_NOFILE the runtime found at
		// start, which would undo Limits.OpenFiles in fork mode.
		if err := syscall.Setrlimit(r.res, &syscall.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fail("rlimits: "+r.name, err)
		}
	}
	return nil
}

const (
	rlimitNproc      = 6
	rlimitSigPending = 11
	rlimitMsgQueue   = 12
)

const closeRangeCloexec = 1 << 2

func closeRange(first, last uint, flags uintptr) error {
	if _, _, e := syscall.RawSyscall(sysCloseRange, uintptr(first), uintptr(last), flags); e != 0 {
		return e
	}
	return nil
}

// System calls added after the numbering was unified across architectures.
const (
	sysOpenTree       = 428
	sysMoveMount      = 429
	sysCloseRange     = 436
	sysOpenat2        = 437
	sysMountSetattr   = 442
	sysLandlockCreate = 444
	sysLandlockAdd    = 445
	sysLandlockSelf   = 446
)

// proxyListener brings the loopback interface of the helper's network
// namespace up, listens on 127.0.0.1:port and sends the listening socket
// to the supervisor on MountFD; the helper keeps no copy. Raw calls, as
// every call of the helper's once it is ready (see Ready).
func proxyListener(port int) error {
	s, err := sys(sysSocket, syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	var ifr [40]byte
	copy(ifr[:], "lo")
	*(*uint16)(unsafe.Pointer(&ifr[16])) = syscall.IFF_UP | syscall.IFF_LOOPBACK | syscall.IFF_RUNNING
	_, err = sys(syscall.SYS_IOCTL, s, syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr[0])))
	closeFD(int(s))
	if err != nil {
		return err
	}
	l, err := sys(sysSocket, syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer closeFD(int(l))
	sa := syscall.RawSockaddrInet4{Family: syscall.AF_INET, Addr: [4]byte{127, 0, 0, 1}}
	be := (*[2]byte)(unsafe.Pointer(&sa.Port)) // network byte order
	be[0], be[1] = byte(port>>8), byte(port)
	if _, err := sys(sysBind, l, uintptr(unsafe.Pointer(&sa)), syscall.SizeofSockaddrInet4); err != nil {
		return err
	}
	if _, err := sys(sysListen, l, 128); err != nil {
		return err
	}
	return sendFD(MountFD, 1, int(l))
}

// shareUserCounts gives the run's user namespace the shares of c (see
// Config.InotifyInstances): what the namespace's processes take of the
// counts the kernel keeps per user is charged to the user who made the
// namespace too, root (the supervisor), and each level of that charge is
// checked against the level's own limit. The namespace's own inotify
// limits start unbounded (its /proc/sys/user values; the host's, in
// /proc/sys/fs/inotify, are the initial namespace's): they are written as
// its root (CAP_SYS_RESOURCE there), before the capabilities are dropped.
// The queued signals and message queue bytes of the namespace's user are
// checked against the process's own RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE,
// which start as the supervisor's: lowered here, soft and hard, which no
// process of the run can raise again (that takes CAP_SYS_RESOURCE in the
// initial namespace).
func shareUserCounts(c *Config) error {
	for _, l := range []struct {
		name string
		v    uint64
	}{
		{"/proc/sys/user/max_inotify_instances", c.InotifyInstances},
		{"/proc/sys/user/max_inotify_watches", c.InotifyWatches},
	} {
		fd, err := openat(atFDCWD, l.name, syscall.O_WRONLY, 0)
		if err != nil {
			return fail(l.name, err)
		}
		var d [20]byte
		i := len(d)
		for v := l.v; v > 0 || i == len(d); v /= 10 {
			i--
			d[i] = byte('0' + v%10)
		}
		_, err = sys(syscall.SYS_PWRITE64, uintptr(fd), uintptr(unsafe.Pointer(&d[i])), uintptr(len(d)-i), 0)
		closeFD(fd)
		if err != nil {
			return fail(l.name, err)
		}
	}
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"sigpending", rlimitSigPending, c.SigPending},
		{"msgqueue", rlimitMsgQueue, c.MsgQueue},
	} {
		if err := syscall.Setrlimit(r.res, &syscall.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fail("rlimits: "+r.name, err)
		}
	}
	return nil
}
