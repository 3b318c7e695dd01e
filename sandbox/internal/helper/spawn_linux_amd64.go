package helper

import (
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// A spawnOp is one raw system call of a spawned helper's child (see
// cloneSpawn): its number, its arguments, and the result it wants:
// anyResult for any but an error, ignoreResult for any at all, else that
// value.
type spawnOp struct {
	nr   uintptr
	args [6]uintptr
	want uintptr
}

const (
	anyResult    = ^uintptr(0)     // -1
	ignoreResult = ^uintptr(0) - 1 // -2
)

// A spawnProg is what cloneSpawn's child runs; its layout is the
// assembly's.
type spawnProg struct {
	ops   *spawnOp
	n     uintptr
	errfd uintptr
	fail  [2]uintptr // the child's error number and the index of the call that failed
}

// cloneSpawn: see spawn_linux_amd64.s.
func cloneSpawn(flags, stack uintptr, prog *spawnProg) (pid uintptr, errno uintptr)

// spawnArenaSize is the size of the region, outside the Go heap, that
// holds what the child reads and writes (its stack at the top, its
// calls, their strings and buffers below), allocated once: a forker
// starts one helper at a time and waits for the child's exec or exit
// (the end of its pipe) before the next. Outside the Go heap, because
// the Go stack of the goroutine that clones may move while the child
// runs, and a value the compiler put there would move from under it.
// spawnStackSize is the stack's part: the child calls no function, so
// the kernel alone uses it (for nothing, its signals blocked).
const (
	spawnArenaSize = 64 << 10
	spawnStackSize = 16 << 10
)

var spawnState struct {
	once  sync.Once
	arena []byte
	// handled lists the signals with a handler in the forker (the Go
	// runtime's), which the child sets back to their default action
	// before it unblocks signals, as execve would; it shares the forker's
	// memory, and a handler run in it would run the forker's runtime
	// there.
	handled []uintptr
	err     error
}

// spawnSetup allocates the arena and lists the forker's signal handlers,
// once.
func spawnSetup() error {
	spawnState.once.Do(func() {
		ar, err := syscall.Mmap(-1, 0, spawnArenaSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
		if err != nil {
			spawnState.err = err
			return
		}
		spawnState.arena = ar
		const sigDfl, sigIgn = 0, 1
		for sig := uintptr(1); sig <= 64; sig++ {
			if sig == uintptr(syscall.SIGKILL) || sig == uintptr(syscall.SIGSTOP) {
				continue
			}
			var old sigaction
			if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
				spawnState.err = e
				return
			}
			if old.handler != sigDfl && old.handler != sigIgn {
				spawnState.handled = append(spawnState.handled, sig)
			}
		}
	})
	return spawnState.err
}

// An arena hands out the spawn arena's bytes below its stack, 16-byte
// aligned, zeroed.
type arena struct {
	buf []byte
	off int
	err error
}

func (a *arena) alloc(n int) unsafe.Pointer {
	off := (a.off + 15) &^ 15
	if a.err != nil || off+n > len(a.buf)-spawnStackSize {
		a.err = syscall.E2BIG
		return unsafe.Pointer(&a.buf[0])
	}
	clear(a.buf[off : off+n])
	a.off = off + n
	return unsafe.Pointer(&a.buf[off])
}

// cstring copies s, NUL-terminated, into the arena.
func (a *arena) cstring(s string) unsafe.Pointer {
	p := a.alloc(len(s) + 1)
	if a.err == nil {
		copy(unsafe.Slice((*byte)(p), len(s)), s)
	}
	return p
}

// strings copies ss into the arena as a NULL-terminated array of
// NUL-terminated strings.
func (a *arena) strings(ss []string) unsafe.Pointer {
	arr := unsafe.Slice((*uintptr)(a.alloc(8*(len(ss)+1))), len(ss)+1)
	for i, s := range ss {
		arr[i] = uintptr(a.cstring(s))
	}
	if a.err != nil {
		return unsafe.Pointer(&a.buf[0])
	}
	return unsafe.Pointer(&arr[0])
}

// startHelper clones the helper of request r into its namespaces, the
// supervisor's child (CLONE_PARENT), in a session of its own, with the
// parent death signal SIGKILL, root in its user namespace mapped onto
// r.UID and r.GID, the descriptors files at their numbers (^0 closes
// one) and the environment env, and execs this program as the helper in
// it. It returns once the exec succeeded or failed.
//
// It does what syscall.ForkExec did with the same attributes, but its
// clone shares the forker's memory (CLONE_VM) instead of copying its page
// tables (which the copy-on-write faults after each clone, in the forker
// and in the child, and the teardown at the child's exec made dearer
// still). ForkExec cannot: it clones with CLONE_VM only together with
// CLONE_VFORK, which suspends the parent until the child's exec, while
// the child of a new user namespace waits for the parent to write its id
// maps. Here the parent is not suspended: the child runs cloneSpawn's
// raw calls on a stack of its own, planned here beforehand, and waits on
// a pipe while this thread writes its id maps; this thread then waits,
// on a second pipe, until the child's exec (or its exit) has let go of
// the shared memory, and only then touches what the child reads.
// Signals are blocked across the clone so that the child starts with
// them blocked; it sets the handlers back to their defaults before it
// puts this thread's mask back, right before its exec.
func startHelper(r ForkRequest, files []uintptr, env []string) (int, error) {
	if err := spawnSetup(); err != nil {
		return 0, err
	}
	// The pipe the child waits on for its id maps (closed without a
	// byte: they failed, and it exits), and the one it reports an error
	// on (its end closed at the exec).
	var maps, errp [2]int
	if err := syscall.Pipe2(maps[:], syscall.O_CLOEXEC); err != nil {
		return 0, err
	}
	defer closeAll(maps[:])
	if err := syscall.Pipe2(errp[:], syscall.O_CLOEXEC); err != nil {
		return 0, err
	}
	defer closeAll(errp[:])
	// The error pipe's end must survive the moves of the descriptors onto
	// 0..len(files)-1.
	if errp[1] < len(files) {
		fd, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(errp[1]), syscall.F_DUPFD_CLOEXEC, uintptr(len(files)))
		if e != 0 {
			return 0, e
		}
		syscall.Close(errp[1])
		errp[1] = int(fd)
	}

	a := &arena{buf: spawnState.arena}
	path := a.cstring("/proc/self/exe")
	argv := a.strings([]string{"clawtool-sandbox"})
	envv := a.strings(env)
	oldMask := (*uint64)(a.alloc(8)) // this thread's mask, put back in the child before its exec
	one := a.alloc(1)
	dfl := a.alloc(int(unsafe.Sizeof(sigaction{}))) // zero: SIG_DFL
	addr := func(p unsafe.Pointer) uintptr { return uintptr(p) }

	ops := make([]spawnOp, 0, 32+len(spawnState.handled))
	call := func(want uintptr, nr uintptr, args ...uintptr) {
		op := spawnOp{nr: nr, want: want}
		copy(op.args[:], args)
		ops = append(ops, op)
	}
	// Wait for the id maps.
	call(anyResult, syscall.SYS_CLOSE, uintptr(maps[1]))
	call(1, syscall.SYS_READ, uintptr(maps[0]), addr(one), 1)
	call(anyResult, syscall.SYS_SETSID)
	if r.Bits&ForkSetgroups != 0 {
		call(anyResult, syscall.SYS_SETGROUPS, 0, 0)
	}
	call(anyResult, syscall.SYS_SETGID, 0)
	call(anyResult, syscall.SYS_SETUID, 0)
	// ForkExec then checks that the parent is still the one it had and
	// kills itself if not; the helper is the first process of its PID
	// namespace, whose parent (outside it) is process 0 to it and which
	// cannot kill itself, so that check did nothing here.
	call(anyResult, syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL))
	// The descriptors, as ForkExec moves them: first those that a later
	// move would overwrite out of the way, then each onto its number.
	fd := make([]int, len(files))
	next := max(len(files), errp[1], maps[0], maps[1])
	for i, f := range files {
		fd[i] = int(f)
		if f != ^uintptr(0) {
			next = max(next, int(f))
		}
	}
	next++
	for i := range fd {
		if fd[i] >= 0 && fd[i] < i {
			call(anyResult, syscall.SYS_DUP3, uintptr(fd[i]), uintptr(next), syscall.O_CLOEXEC)
			fd[i] = next
			next++
		}
	}
	for i := range fd {
		switch {
		case fd[i] < 0:
			call(ignoreResult, syscall.SYS_CLOSE, uintptr(i))
		case fd[i] == i:
			call(anyResult, syscall.SYS_FCNTL, uintptr(i), syscall.F_SETFD, 0)
		default:
			call(anyResult, syscall.SYS_DUP3, uintptr(fd[i]), uintptr(i), 0)
		}
	}
	for _, sig := range spawnState.handled {
		call(anyResult, syscall.SYS_RT_SIGACTION, sig, addr(dfl), 0, 8)
	}
	call(anyResult, syscall.SYS_RT_SIGPROCMASK, sigSetmask, addr(unsafe.Pointer(oldMask)), 0, 8)
	call(anyResult, syscall.SYS_EXECVE, addr(path), addr(argv), addr(envv))
	prog := (*spawnProg)(a.alloc(int(unsafe.Sizeof(spawnProg{}))))
	list := unsafe.Slice((*spawnOp)(a.alloc(len(ops)*int(unsafe.Sizeof(spawnOp{})))), len(ops))
	if a.err != nil {
		return 0, a.err
	}
	copy(list, ops)
	prog.ops, prog.n, prog.errfd = &list[0], uintptr(len(list)), uintptr(errp[1])

	// The mask is per thread: this goroutine stays on this thread (the
	// forker's is locked) from the block to the unblock.
	runtime.LockOSThread()
	all := ^uint64(0)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(oldMask)), 8, 0, 0)
	stack := uintptr(unsafe.Pointer(&spawnState.arena[0])) + spawnArenaSize
	const cloneVM, cloneParent = 0x100, 0x8000
	pid, e := cloneSpawn(uintptr(r.Flags)|cloneVM|cloneParent|uintptr(syscall.SIGCHLD), stack, prog)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask, uintptr(unsafe.Pointer(oldMask)), 0, 8, 0, 0)
	runtime.UnlockOSThread()
	if e != 0 {
		return 0, syscall.Errno(e)
	}
	syscall.Close(errp[1])
	errp[1] = -1

	err := writeIDMaps(int(pid), r)
	if err == nil {
		// Nothing else writes to the pipe: one byte fits.
		_, err = syscall.Write(maps[1], []byte{0})
	}
	// Without the byte, the child reads the end of the pipe and exits.
	syscall.Close(maps[1])
	maps[1] = -1

	// Until the child has exec'd or exited, it reads ops and the memory
	// they point to: the end of this pipe says it no longer does.
	var report [16]byte
	n := 0
	for n < len(report) {
		m, rerr := syscall.Read(errp[0], report[n:])
		if rerr == syscall.EINTR {
			continue
		}
		if rerr != nil || m <= 0 {
			break
		}
		n += m
	}
	switch {
	case err != nil:
		return 0, err
	case n == len(report):
		errno := syscall.Errno(*(*uintptr)(unsafe.Pointer(&report[0])))
		if errno == 0 {
			errno = syscall.EINVAL
		}
		return 0, errno
	case n != 0:
		return 0, syscall.EPIPE
	}
	return int(pid), nil
}

// writeIDMaps writes the id maps of the user namespace of process pid:
// root onto r.UID and r.GID, setgroups denied unless r says so (as
// ForkExec writes them).
func writeIDMaps(pid int, r ForkRequest) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	setgroups := "deny"
	if r.Bits&ForkSetgroups != 0 {
		setgroups = "allow"
	}
	for _, w := range [][2]string{
		{"uid_map", "0 " + strconv.FormatUint(uint64(r.UID), 10) + " 1\n"},
		{"setgroups", setgroups},
		{"gid_map", "0 " + strconv.FormatUint(uint64(r.GID), 10) + " 1\n"},
	} {
		fd, err := syscall.Open(dir+w[0], syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		_, err = syscall.Write(fd, []byte(w[1]))
		if cerr := syscall.Close(fd); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// closeAll closes the descriptors of fds that are not -1.
func closeAll(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
}
