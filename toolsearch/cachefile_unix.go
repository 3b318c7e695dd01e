//go:build unix

package toolsearch

import (
	"os"
	"syscall"
)

// cacheOpenFlags opens a cache file without following a link at its last
// element and without waiting for a writer (a FIFO).
const cacheOpenFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// wordVectorsOpenFlags opens a word-vector file without waiting for a
// writer: a FIFO is then refused as not a regular file.
const wordVectorsOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK
