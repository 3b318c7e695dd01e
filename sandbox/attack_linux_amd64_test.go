package sandbox

import (
	"fmt"
	"strings"
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

// int80 returns a function that makes a system call of the i386 ABI
// (int $0x80) from this 64-bit process: the kernel runs it as a 32-bit
// call, with the i386 numbers, and seccomp sees AUDIT_ARCH_I386. The
// code is three bytes on a page of its own (int $0x80; ret); Go's
// register ABI passes the arguments in RAX, RBX and RCX, which are the
// number and the first two arguments of an i386 call, and takes the
// result from RAX.
func int80() (func(nr, a, b uintptr) uintptr, error) {
	mem, err := unix.Mmap(-1, 0, unix.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	copy(mem, []byte{0xcd, 0x80, 0xc3})
	if err := unix.Mprotect(mem, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		return nil, err
	}
	code := uintptr(unsafe.Pointer(&mem[0]))
	closure := &code
	return *(*func(nr, a, b uintptr) uintptr)(unsafe.Pointer(&closure)), nil
}

func init() {
	// "foreignabi" makes calls the filter denies (EPERM) through the
	// i386 ABI: each either reaches the kernel (EINVAL, EBADF ...) or is
	// refused by the filter (EPERM, or ENOSYS for an ABI it refuses
	// whole).
	attacks["foreignabi"] = func([]string) (string, error) {
		call, err := int80()
		if err != nil {
			return "", fmt.Errorf("no i386 entry: %w", err)
		}
		// i386 numbers (arch/x86/entry/syscalls/syscall_32.tbl).
		calls := []struct {
			name string
			nr   uintptr
			a, b uintptr
		}{
			{"bpf", 357, 1 << 20, 0},
			{"keyctl", 288, 1 << 20, 0},
			{"userfaultfd", 374, 1 << 20, 0},
			{"setns", 346, 1 << 20, 0},
			{"unshare", 310, unix.CLONE_NEWUSER, 0},
			{"ptrace", 26, unix.PTRACE_SEIZE, 1},
		}
		var reached, refused []string
		last := syscall.Errno(0)
		for _, c := range calls {
			r := int32(call(c.nr, c.a, c.b))
			e := syscall.Errno(0)
			if r < 0 {
				e = syscall.Errno(-r)
			}
			if e == unix.EPERM || e == unix.ENOSYS {
				refused = append(refused, c.name)
				last = e
				continue
			}
			reached = append(reached, fmt.Sprintf("%s (%v)", c.name, e))
		}
		if len(reached) > 0 {
			return "i386 calls reached the kernel: " + strings.Join(reached, ", "), nil
		}
		return "", fmt.Errorf("i386 calls refused: %s: %w", strings.Join(refused, ","), last)
	}
}

// archCatalogRows are the catalog rows of this architecture alone.
func archCatalogRows() []catalogRow {
	return []catalogRow{
		{id: "A54", name: "kernel attack surface through the i386 ABI (int $0x80 from a 64-bit process)", noContainer: engineSeccomp,
			setup: fixed("foreignabi"), want: []string{"function not implemented"}},
	}
}
