package helper

import (
	"syscall"
	"unsafe"
)

// applyLandlock restricts this thread (and so the command it executes):
// read and execute c.LandlockRead, read and write the workspace and /tmp,
// read and write the harmless devices; under NoTCP no TCP bind or connect;
// signals and abstract unix sockets stay inside. The supervisor checked
// the kernel's ABI before starting the helper.
func applyLandlock(c *Config) error {
	attr := struct{ fs, net, scoped uint64 }{fs: HandledFS, scoped: Scoped}
	if c.NoTCP {
		attr.net = HandledNet
	}
	r, _, e := syscall.RawSyscall(sysLandlockCreate, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fail("create ruleset", e)
	}
	ruleset := int(r)
	defer closeFD(ruleset)
	add := func(path string, dirRights, fileRights uint64, must bool) error {
		fd, err := openat(atFDCWD, path, oPath, 0)
		if err != nil {
			if !must && err == syscall.ENOENT {
				return nil
			}
			return fail(path, err)
		}
		defer closeFD(fd)
		var st syscall.Stat_t
		if err := fstat(fd, &st); err != nil {
			return fail(path, err)
		}
		rule := struct {
			allowed uint64
			fd      int32
		}{allowed: fileRights, fd: int32(fd)}
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			rule.allowed = dirRights
		}
		if _, _, e := syscall.RawSyscall6(sysLandlockAdd, uintptr(ruleset), 1 /* LANDLOCK_RULE_PATH_BENEATH */, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return fail(path, e)
		}
		return nil
	}
	for _, p := range c.LandlockRead {
		if err := add(p, ReadDirs, ReadFiles, false); err != nil {
			return err
		}
	}
	rw := []string{"/tmp"}
	if c.Workspace != "" {
		rw = append(rw, c.Workspace)
	}
	for _, p := range rw {
		if err := add(p, WriteDirs, WriteFiles, true); err != nil {
			return err
		}
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full"} {
		if err := add(p, WriteFiles, WriteFiles, true); err != nil {
			return err
		}
	}
	// This thread alone: it starts the command next (a child cloned from
	// it inherits the domain).
	if _, _, e := syscall.RawSyscall(sysLandlockSelf, uintptr(ruleset), 0, 0); e != 0 {
		return fail("restrict", e)
	}
	return nil
}
