//go:build unix

package bearer

import (
	"fmt"
	"os"
	"syscall"
)

// checkSecretFile refuses the open file of an HMAC secret that other
// users may read or write, or that another user owns; an error reading
// its mode refuses it too.
func checkSecretFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("the HMAC secret's file mode cannot be read, so the secret is not used: %w", err)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("an HMAC secret that other users may read or write (mode %04o) lets them sign tokens; chmod 600 it", m)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("the HMAC secret's owner cannot be read, so the secret is not used")
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("the HMAC secret's file belongs to another user (uid %d), who may read it or change it; make it this user's own", st.Uid)
	}
	return nil
}
