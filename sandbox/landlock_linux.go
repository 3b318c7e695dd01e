package sandbox

import (
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// minLandlockABI is the Landlock ABI the sandbox needs: file system rights
// including truncate and device ioctls, TCP bind and connect, and scoping of
// signals and abstract unix sockets.
const minLandlockABI = 6

// landlockABI returns the kernel's Landlock ABI version, or 0.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// applyLandlock restricts this thread (and so the command it executes):
// read and execute the system paths and the read-only paths, read and write
// the workspace, /tmp and the harmless devices; under NetworkNone no TCP
// bind or connect; signals and abstract unix sockets stay inside.
func applyLandlock(c *helperConfig) error {
	cfg := landlock.Config{HandledAccessFS: landlock.V6.HandledAccessFS, Scoped: landlock.V6.Scoped}
	if c.Network == NetworkNone {
		cfg.HandledAccessNet = landlock.V6.HandledAccessNet
	}
	var rules []landlock.Rule
	addRead := func(paths ...string) {
		for _, p := range paths {
			st, err := os.Stat(p)
			switch {
			case err != nil:
				continue
			case st.IsDir():
				rules = append(rules, landlock.RODirs(p))
			default:
				rules = append(rules, landlock.ROFiles(p))
			}
		}
	}
	addRead(SystemReadOnly...)
	addRead(c.ReadOnly...)
	addRead("/proc", "/dev/random", "/dev/urandom")
	rw := []string{"/tmp"}
	if c.Workspace != "" {
		rw = append(rw, c.Workspace)
	}
	rules = append(rules,
		landlock.RWDirs(rw...),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full"),
	)
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// This thread alone: it executes the command next.
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), uintptr(flags), 0); errno != 0 {
		return errno
	}
	return nil
}
