//go:build unix

package bearer

import (
	"fmt"
	"os"

	"github.com/miniopenclaw/tool/internal/fileowner"
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
	uid, other := fileowner.Other(fi)
	if uid < 0 {
		return fmt.Errorf("the HMAC secret's owner cannot be read, so the secret is not used")
	}
	if other {
		return fmt.Errorf("the HMAC secret's file belongs to another user (uid %d), who may read it or change it; make it this user's own", uid)
	}
	return nil
}

// checkPublicKeyFile refuses the open file of a public key that users
// other than its owner may write, or whose owner is neither this
// process's user nor root: whoever may write it puts their own key there
// and signs tokens for anyone. Others may read it: it signs nothing. An
// error reading its mode refuses it too.
func checkPublicKeyFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("the public key's file mode cannot be read, so the key is not used: %w", err)
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return fmt.Errorf("a public key file that other users may write (mode %04o) lets them put their own key there and sign tokens; chmod go-w it", m)
	}
	uid, ok := fileowner.Trusted(fi)
	if uid < 0 {
		return fmt.Errorf("the public key's owner cannot be read, so the key is not used")
	}
	if !ok {
		return fmt.Errorf("the public key's file belongs to another user (uid %d), who may put their own key there; make it this user's own or root's", uid)
	}
	return nil
}
