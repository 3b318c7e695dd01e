//go:build unix

package oauth

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openPrivate opens a record file for reading, refusing a symbolic link
// and a file that another user owns or may read or write.
func openPrivate(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && pe.Err == syscall.ELOOP {
			return nil, fmt.Errorf("oauth: %s is a symbolic link; token records must be plain files", name)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("oauth: %s is not a regular file", name)
	}
	if err == nil {
		err = checkPrivate(name, fi, "chmod 600")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkPrivate refuses a file or directory that other users may use, or
// that another user owns; fix says how to mend the mode.
func checkPrivate(name string, fi fs.FileInfo, fix string) error {
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("oauth: %s may be read or written by other users (mode %04o); %s %s, or remove it", name, m, fix, name)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("oauth: %s belongs to another user (uid %d); remove it", name, st.Uid)
	}
	return nil
}
