//go:build !linux

package protected

import "io/fs"

// identity is zero where the sandbox backends do not run: the comparison
// then rests on type, size and modification time.
func identity(fs.FileInfo) (dev, ino uint64, ctime int64) { return 0, 0, 0 }

// links is 1 where the sandbox backends do not run natively: a container
// engine on such a host holds the workspace in a machine of its own.
func links(fs.FileInfo) uint64 { return 1 }
