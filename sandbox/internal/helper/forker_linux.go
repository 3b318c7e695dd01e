package helper

import (
	"syscall"
	"unsafe"
)

// serveForker is the forker (see ForkerMode): it greets on ForkerFD, then
// serves one request at a time until the socket ends, and exits. It first
// lets go of every descriptor its supervisor passed on by mistake (see
// closeStrays) and marks the rest beyond ForkerFD close-on-exec: a helper
// it starts gets only the descriptors its request carries.
func serveForker() {
	// Its name is per thread, and each clone copies its maker's (see
	// nameClone): the forker serves from this thread alone.
	pinThread()
	closeStrays(ForkerFD + 1)
	if err := closeRange(ForkerFD+1, ^uint(0), closeRangeCloexec); err != nil {
		syscall.Exit(1)
	}
	hello := append([]byte{ForkerHello}, protocol...)
	if err := syscall.Sendmsg(ForkerFD, hello, nil, nil, syscall.MSG_NOSIGNAL); err != nil {
		syscall.Exit(1)
	}
	// One byte more than a request may hold, so that a longer one shows
	// as such even without MSG_TRUNC; room for one descriptor more than a
	// request may carry, likewise.
	buf := make([]byte, MaxForkRequest+1)
	oob := make([]byte, syscall.CmsgSpace((ForkMaxFiles+1)*4))
	for {
		n, oobn, flags, _, err := syscall.Recvmsg(ForkerFD, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || (n == 0 && oobn == 0) {
			syscall.Exit(0) // the supervisor's end closed
		}
		fds := rights(oob[:oobn])
		reply := serveFork(buf[:n], fds, flags)
		for _, fd := range fds {
			syscall.Close(fd)
		}
		if err := syscall.Sendmsg(ForkerFD, reply, nil, nil, syscall.MSG_NOSIGNAL); err != nil {
			syscall.Exit(1)
		}
	}
}

// rights returns every descriptor the control messages oob carry.
func rights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if fs, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, fs...)
		}
	}
	return fds
}

// serveFork checks one request and starts its helper, returning the
// reply. The caller closes fds.
func serveFork(b []byte, fds []int, flags int) []byte {
	refuse := func(why string) []byte {
		r := append([]byte{ForkRefused}, why...)
		return r[:min(len(r), MaxForkReply)]
	}
	if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 || len(b) > MaxForkRequest {
		return refuse("request too large")
	}
	r, why := DecodeForkRequest(b)
	if why != "" {
		return refuse(why)
	}
	if len(fds) != r.Files() {
		return refuse("the request's descriptors are not the ones it names")
	}
	// ConfigFD, ErrorFD, MountFD and TraceFD at their numbers; -1 closes.
	files := []uintptr{^uintptr(0), uintptr(fds[0]), uintptr(fds[1]), uintptr(fds[2]), uintptr(fds[3]), ^uintptr(0)}
	next := 4
	if r.Bits&ForkStdin != 0 {
		files[0] = uintptr(fds[next])
		next++
	} else {
		null, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return refuse("open /dev/null: " + err.Error())
		}
		defer syscall.Close(null)
		files[0] = uintptr(null)
	}
	if r.Bits&ForkMountFD != 0 {
		files[5] = uintptr(fds[next])
		next++
	}
	if r.Bits&ForkTraceFD != 0 {
		files = append(files, uintptr(fds[next]))
	}
	env := HelperEnv(r.Bits&ForkMounts != 0, r.Bits&ForkFork != 0)
	restore, err := nameClone(CloneName(r.Tag))
	if err != nil {
		// Unnamed, a clone whose exec failed could not be found.
		return refuse("name the clone: " + err.Error())
	}
	pid, err := startHelper(r, files, env)
	restore()
	if err != nil {
		return refuse("start the helper: " + err.Error())
	}
	return le([]byte{ForkStarted}, uint64(pid), 4)
}

// nameClone gives this thread, and so the next clone made from it, the
// name name (see CloneName), and returns what puts the thread's own name
// back. A clone copies the name of the thread that made it and keeps it
// until its exec; one whose exec fails after its setsid (a session of its
// own) dies with no descriptor left, so the name is all that tells the
// supervisor it is the forker's.
func nameClone(name string) (restore func(), err error) {
	const prSetName, prGetName = 15, 16
	var old, buf [16]byte
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prGetName, uintptr(unsafe.Pointer(&old[0])), 0); e != 0 {
		return nil, e
	}
	copy(buf[:15], name)
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(&buf[0])), 0); e != 0 {
		return nil, e
	}
	return func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(&old[0])), 0) }, nil
}

// closeStrays closes every descriptor from first on that is not
// close-on-exec. The Go runtime and this package open theirs
// close-on-exec, so such a descriptor came through the exec from the
// process that started this one (inherited by the supervisor from its own
// parent, or opened without O_CLOEXEC), and nothing here uses it; a
// long-lived forker, or a spare the supervisor started itself, would
// otherwise hold it (a listening socket, a pipe someone waits to see
// closed) for its whole life.
func closeStrays(first int) {
	dir, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer syscall.Close(dir)
	var fds []int
	buf := make([]byte, 4096)
	for {
		n, err := syscall.ReadDirent(dir, buf)
		if err != nil || n <= 0 {
			break
		}
		_, _, names := syscall.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			fd := 0
			for _, c := range []byte(name) {
				if c < '0' || c > '9' || fd > 1<<24 {
					fd = -1
					break
				}
				fd = fd*10 + int(c-'0')
			}
			if fd >= first && fd != dir {
				fds = append(fds, fd)
			}
		}
	}
	for _, fd := range fds {
		flags, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0)
		if e == 0 && flags&syscall.FD_CLOEXEC == 0 {
			syscall.Close(fd)
		}
	}
}
