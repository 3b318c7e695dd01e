//go:build unix

package oauth

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
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

// lockPoll is how often lockFile tries again for a lock another process holds.
const lockPoll = 10 * time.Millisecond

// lockFile takes an exclusive flock(2) on name (made with mode 0600 when
// missing), trying again until ctx is done.
func lockFile(ctx context.Context, name string) (func(), error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("oauth: lock: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("oauth: lock %s is not a regular file", name)
	} else if err := checkPrivate(name, fi, "chmod 600"); err != nil {
		f.Close()
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("oauth: lock %s: %w", name, err)
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("oauth: waiting for the lock of %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}
