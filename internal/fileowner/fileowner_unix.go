//go:build unix

package fileowner

import (
	"io/fs"
	"os"
	"syscall"
)

// ModesSayWho is whether a file's mode bits and owner say who may write
// it: true on Unix.
const ModesSayWho = true

// Of returns the user ID that owns fi, and whether it could be read.
func Of(fi fs.FileInfo) (uid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), true
}

func euid() int { return os.Geteuid() }
