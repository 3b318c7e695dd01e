//go:build unix

package policy

import (
	"fmt"
	"os"
	"syscall"
)

// checkKeyOwner refuses a key file that neither this process's user nor
// root owns: its owner could change the key, or read it later.
func checkKeyOwner(name string, fi os.FileInfo) error {
	return checkKeyOwnerFor(name, fi, os.Geteuid())
}

// checkKeyOwnerFor is checkKeyOwner for the user euid.
func checkKeyOwnerFor(name string, fi os.FileInfo, euid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: its owner cannot be read: refused", name)
	}
	if uid := int64(st.Uid); uid != int64(euid) && uid != 0 {
		return fmt.Errorf("%s is owned by user %d, neither this process's user (%d) nor root: its owner could change the key (chown %d %s)", name, uid, euid, euid, name)
	}
	return nil
}
