//go:build unix

package policy

import (
	"io/fs"
	"os"
	"syscall"
)

// otherOwner returns the owner of fi and whether it is not this
// process's user; an owner that cannot be read counts as another.
func otherOwner(fi fs.FileInfo) (uid int, other bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	return int(st.Uid), int(st.Uid) != os.Geteuid()
}
