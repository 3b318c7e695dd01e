//go:build unix

package policy

import (
	"fmt"
	"os"
	"syscall"
)

// checkPolicyFile refuses a policy file, as opened, that users other
// than its owner may write, or whose owner is neither this process's
// (effective) user nor root: they could rewrite the permissions, which
// the next reload or start would put in force.
func checkPolicyFile(name string, fi os.FileInfo) error {
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return fmt.Errorf("%s: other users may write it (mode %04o), and so rewrite the permissions: chmod go-w %s", name, m, name)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: its owner cannot be read: refused", name)
	}
	if uid, euid := int64(st.Uid), int64(os.Geteuid()); uid != euid && uid != 0 {
		return fmt.Errorf("%s is owned by user %d, neither this process's user (%d) nor root, who could rewrite the permissions: chown %d %s", name, uid, euid, euid, name)
	}
	return nil
}
