//go:build unix

package plugins

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/miniopenclaw/tool/internal/fileowner"
)

// checkTrusted refuses a configuration, sandbox policy or permissions
// file fi (named name) that another user may change: one whose group or others may
// write it, or that a user other than this process's or root owns. Such
// a file names the commands the host runs as its user, what a confined
// server may reach, or what calls are allowed.
func checkTrusted(name string, fi fs.FileInfo) error {
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return fmt.Errorf("%s may be written by other users (mode %04o), who could make this program run their commands, widen a sandbox or rewrite its permissions: refused; chmod go-w %s", name, m, name)
	}
	uid, ok := fileowner.Trusted(fi)
	switch {
	case uid < 0:
		return fmt.Errorf("%s: its owner cannot be read: refused", name)
	case !ok:
		euid := os.Geteuid()
		return fmt.Errorf("%s is owned by user %d, neither this process's user (%d) nor root, who could change it at any time: refused; chown %d %s", name, uid, euid, euid, name)
	}
	return nil
}
