//go:build linux && !amd64

package helper

import "syscall"

// cloneCommand forks the command's child, a copy of the helper: it
// returns the child's process id in the parent and 0 in the child.
//
//go:nosplit
//go:norace
func cloneCommand() (pid uintptr, errno uintptr) {
	pid, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	return pid, uintptr(e)
}

// sharedMemory tells whether cloneCommand's child shares the helper's
// memory (it does not here: the child is a copy).
const sharedMemory = false
