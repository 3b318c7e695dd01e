//go:build unix

package regularfile

import "syscall"

// openFlags are added to every open: no waiting for a pipe's writer or
// a device, and no controlling terminal taken.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
