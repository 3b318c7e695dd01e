package sandbox

import (
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
