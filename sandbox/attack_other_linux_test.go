//go:build linux && !amd64

package sandbox

import "syscall"

// legacySyscalls: the architecture has none of the x86 legacy calls.
func legacySyscalls(*[120]byte) []struct {
	name string
	fn   func() syscall.Errno
} {
	return nil
}

// archCatalogRows: no rows of this architecture alone.
func archCatalogRows() []catalogRow { return nil }
