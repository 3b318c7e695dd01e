//go:build unix

package policy

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on the file name, made if need be,
// and returns what releases it. The lock is per open file, so two stores
// in one process exclude each other as two processes do.
func lockFile(name string) (func(), error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
