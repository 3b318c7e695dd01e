package helper

import (
	"syscall"
	"unsafe"
)

// The helper makes every system call raw. A call through syscall.Syscall
// lets the runtime hand the processor to another thread when the call
// lasts more than a few microseconds, and with GOMAXPROCS=1 that starts a
// new thread; mounts last longer than that. The helper has nothing else to
// run, so it keeps its one thread.

// atFDCWD is AT_FDCWD; cwdArg passes it to a raw call.
const atFDCWD = -100

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func sys(trap uintptr, a ...uintptr) (uintptr, error) {
	var args [6]uintptr
	copy(args[:], a)
	r, _, e := syscall.RawSyscall6(trap, args[0], args[1], args[2], args[3], args[4], args[5])
	return r, errnoErr(e)
}

func p(b *byte) uintptr { return uintptr(unsafe.Pointer(b)) }

func openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	s, err := ptr(path)
	if err != nil {
		return -1, err
	}
	for {
		fd, err := sys(syscall.SYS_OPENAT, uintptr(dirfd), p(s), uintptr(flags|syscall.O_CLOEXEC), uintptr(mode))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		return int(fd), nil
	}
}

func closeFD(fd int) error {
	_, err := sys(syscall.SYS_CLOSE, uintptr(fd))
	return err
}

func fstat(fd int, st *syscall.Stat_t) error {
	_, err := sys(syscall.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)))
	return err
}

// stat is stat(2), or lstat(2) when nofollow is set.
func stat(path string, st *syscall.Stat_t, nofollow bool) error {
	flags := oPath
	if nofollow {
		flags |= syscall.O_NOFOLLOW
	}
	fd, err := openat(atFDCWD, path, flags, 0)
	if err != nil {
		return err
	}
	defer closeFD(fd)
	return fstat(fd, st)
}

func mkdir(path string, mode uint32) error {
	s, err := ptr(path)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_MKDIRAT, cwdArg(), p(s), uintptr(mode))
	return err
}

func chmod(path string, mode uint32) error {
	s, err := ptr(path)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_FCHMODAT, cwdArg(), p(s), uintptr(mode))
	return err
}

func symlink(target, link string) error {
	t, err := ptr(target)
	if err != nil {
		return err
	}
	l, err := ptr(link)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_SYMLINKAT, p(t), cwdArg(), p(l))
	return err
}

// readlink returns the target of the symbolic link at path.
func readlink(path string) (string, error) {
	s, err := ptr(path)
	if err != nil {
		return "", err
	}
	var buf [4096]byte
	n, err := sys(syscall.SYS_READLINKAT, cwdArg(), p(s), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func mount(source, target, fstype string, flags uintptr, data string) error {
	var src, typ, dat *byte
	var err error
	if source != "" {
		if src, err = ptr(source); err != nil {
			return err
		}
	}
	if fstype != "" {
		if typ, err = ptr(fstype); err != nil {
			return err
		}
	}
	if data != "" {
		if dat, err = ptr(data); err != nil {
			return err
		}
	}
	tgt, err := ptr(target)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_MOUNT, p(src), p(tgt), p(typ), flags, p(dat))
	return err
}

func unmount(target string, flags uintptr) error {
	t, err := ptr(target)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_UMOUNT2, p(t), flags)
	return err
}

func pivotRoot(newRoot, putOld string) error {
	n, err := ptr(newRoot)
	if err != nil {
		return err
	}
	o, err := ptr(putOld)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_PIVOT_ROOT, p(n), p(o))
	return err
}

func chdir(path string) error {
	s, err := ptr(path)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_CHDIR, p(s))
	return err
}

func sethostname(name string) error {
	b := []byte(name)
	_, err := sys(syscall.SYS_SETHOSTNAME, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return err
}

func access(path string, mode uint32) error {
	s, err := ptr(path)
	if err != nil {
		return err
	}
	_, err = sys(syscall.SYS_FACCESSAT, cwdArg(), p(s), uintptr(mode))
	return err
}

// read reads from fd, blocking, with a raw system call like the helper's
// others. Told of a blocking call (syscall.Syscall), the runtime hands the
// processor to another thread of its own, which it may start then: a
// thread the run's process limit counts (see Ready), started after the
// run counted the helper's tasks. Not told, the runtime's monitor thread
// keeps waking every 10 ms while a spare waits, to look at a goroutine it
// believes running; that costs an idle spare a little processor
// (BENCHMARKS.md). The goroutine stays locked to the main thread (package
// initialisation), so what the helper sets per thread afterwards is still
// set on the thread that starts the command.
func read(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), errnoErr(e)
}

func write(fd int, b []byte) {
	if len(b) > 0 {
		sys(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	}
}

func cwdArg() uintptr {
	fd := atFDCWD
	return uintptr(fd)
}

// sendFD sends the descriptor fd (SCM_RIGHTS) on the unix socket sock
// with the one byte tag, raw: syscall.Sendmsg, told of a call the kernel
// may preempt under load, lets the runtime start a thread after the run
// counted the helper's tasks (see read).
func sendFD(sock int, tag byte, fd int) error {
	b := [1]byte{tag}
	oob := syscall.UnixRights(fd)
	var iov syscall.Iovec
	msg := oneByteMsg(&b, &iov, oob)
	for {
		_, err := sys(sysSendmsg, uintptr(sock), uintptr(unsafe.Pointer(&msg)), syscall.MSG_NOSIGNAL)
		if err != syscall.EINTR {
			return err
		}
	}
}

// oneByteMsg is the message sendFD and recvFD give the kernel: the byte b
// through iov (which the caller keeps until the call returns) and the
// control data oob.
func oneByteMsg(b *[1]byte, iov *syscall.Iovec, oob []byte) syscall.Msghdr {
	iov.Base = &b[0]
	iov.SetLen(1)
	msg := syscall.Msghdr{Iov: iov, Iovlen: 1, Control: &oob[0]}
	msg.SetControllen(len(oob))
	return msg
}

// recvFD receives one descriptor passed (SCM_RIGHTS) on the unix socket
// fd, blocking until it comes; the message's byte is ignored.
func recvFD(fd int) (int, error) {
	var b [1]byte
	oob := make([]byte, syscall.CmsgSpace(4))
	var iov syscall.Iovec
	msg := oneByteMsg(&b, &iov, oob)
	for {
		n, err := sys(sysRecvmsg, uintptr(fd), uintptr(unsafe.Pointer(&msg)), syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		if n == 0 {
			return -1, textError("the supervisor sent no workspace")
		}
		break
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:msg.Controllen])
	if err != nil || len(msgs) != 1 {
		return -1, textError("malformed workspace message")
	}
	fds, err := syscall.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, f := range fds {
			closeFD(f)
		}
		return -1, textError("malformed workspace message")
	}
	return fds[0], nil
}
