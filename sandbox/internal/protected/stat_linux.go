package protected

import (
	"io/fs"
	"syscall"
)

// identity is the device, inode and change time of st.
func identity(st fs.FileInfo) (dev, ino uint64, ctime int64) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev), uint64(sys.Ino), sys.Ctim.Nano()
	}
	return 0, 0, 0
}

// links is the number of names of the file st describes.
func links(st fs.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}
