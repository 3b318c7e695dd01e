//go:build unix

package policy

import (
	"fmt"
	"os"

	"github.com/miniopenclaw/tool/internal/fileowner"
)

// checkKeyOwner refuses a key file that neither this process's user nor
// root owns: its owner could change the key, or read it later.
func checkKeyOwner(name string, fi os.FileInfo) error {
	return checkKeyOwnerFor(name, fi, os.Geteuid())
}

// checkKeyOwnerFor is checkKeyOwner for the user euid.
func checkKeyOwnerFor(name string, fi os.FileInfo, euid int) error {
	uid, ok := fileowner.Of(fi)
	if !ok {
		return fmt.Errorf("%s: its owner cannot be read: refused", name)
	}
	if uid != euid && uid != 0 {
		return fmt.Errorf("%s is owned by user %d, neither this process's user (%d) nor root: its owner could change the key (chown %d %s)", name, uid, euid, euid, name)
	}
	return nil
}
