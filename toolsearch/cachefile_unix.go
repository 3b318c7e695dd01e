//go:build unix

package toolsearch

import "syscall"

// noFollow opens a cache file without following a link at its last
// element.
const noFollow = syscall.O_NOFOLLOW
