package sandbox

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// legacySyscalls are the x86 calls the "syscalls" attack tries besides
// its list: modify_ldt reading the LDT (which succeeds unless the filter
// denies it) and uselib of a missing library (ENOENT from the kernel).
func legacySyscalls(p *[120]byte) []struct {
	name string
	fn   func() syscall.Errno
} {
	return []struct {
		name string
		fn   func() syscall.Errno
	}{
		{"modify_ldt", func() syscall.Errno {
			_, _, e := unix.Syscall(unix.SYS_MODIFY_LDT, 0, uintptr(unsafe.Pointer(p)), uintptr(len(p)))
			return e
		}},
		{"uselib", func() syscall.Errno {
			path := []byte("/nonexistent\x00")
			_, _, e := unix.Syscall(unix.SYS_USELIB, uintptr(unsafe.Pointer(&path[0])), 0, 0)
			return e
		}},
	}
}
