//go:build unix

package policy

import (
	"fmt"
	"os"

	"github.com/miniopenclaw/tool/internal/fileowner"
)

// checkPolicyFile refuses a policy file, as opened, that users other
// than its owner may write, or whose owner is neither this process's
// (effective) user nor root: they could rewrite the permissions, which
// the next reload or start would put in force.
func checkPolicyFile(name string, fi os.FileInfo) error {
	return checkUnshared(name, fi, "rewrite the permissions")
}

// checkUnshared refuses a file, as opened, that users other than its
// owner may write, or whose owner is neither this process's (effective)
// user nor root; harm says what they could do with it.
func checkUnshared(name string, fi os.FileInfo, harm string) error {
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return fmt.Errorf("%s: other users may write it (mode %04o), and so %s: chmod go-w %s", name, m, harm, name)
	}
	uid, ok := fileowner.Trusted(fi)
	switch {
	case uid < 0:
		return fmt.Errorf("%s: its owner cannot be read: refused", name)
	case !ok:
		euid := os.Geteuid()
		return fmt.Errorf("%s is owned by user %d, neither this process's user (%d) nor root, who could %s: chown %d %s", name, uid, euid, harm, euid, name)
	}
	return nil
}
