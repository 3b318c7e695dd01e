package helper

import (
	"syscall"
	"unsafe"
)

func init() {
	switch mode, _ := syscall.Getenv(Env); mode {
	case "":
		return
	case "probe":
		syscall.Exit(0)
	case "1", "spare":
		// Credentials, Landlock, seccomp and no_new_privs are per thread:
		// the helper builds everything on this one and executes the
		// command from it. The runtime keeps the goroutine running package
		// initialisation locked to the main thread, so no LockOSThread
		// (which would start the runtime's template thread).
		err := run(mode == "spare")
		write(ErrorFD, []byte(err.Error()))
		syscall.Exit(ExitSetup)
	}
}

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

func run(ack bool) error {
	started := monotonic()
	// The part of the root that is the same for every run is built before
	// the configuration is read: a spare does it before it is claimed.
	var root *preparedRoot
	var rootErr error
	if v, _ := syscall.Getenv(PrepareRootEnv); v == "1" {
		root, rootErr = prepareRoot()
	}
	prepared := monotonic()
	var c *Config
	trace := func() {}
	{
		raw, err := readConfig()
		if err != nil {
			return fail("read configuration", err)
		}
		if ack {
			write(ErrorFD, []byte{Ack})
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
	if root != nil {
		if err := finishRoot(c, root); err != nil {
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
	if c.Has(UserNS) {
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
	// A raw execve: syscall.Exec would put back the soft RLIMIT_NOFILE the
	// Go runtime found at start, undoing Limits.OpenFiles.
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return fail("exec "+c.Argv[0], errno)
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
	for i := range b {
		b[i] = byte(ns >> (8 * i))
	}
	write(fd, b[:])
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
		{"core", syscall.RLIMIT_CORE, 0},
		{"nproc", rlimitNproc, c.NProc},
		{"data", syscall.RLIMIT_DATA, c.Data},
	} {
		if r.v == 0 && (r.res == rlimitNproc || r.res == syscall.RLIMIT_DATA) {
			continue // enforced by the run's cgroup instead
		}
		lim := syscall.Rlimit{Cur: r.v, Max: r.v}
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(r.res), uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
			return fail("rlimits: "+r.name, e)
		}
	}
	return nil
}

const rlimitNproc = 6

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
