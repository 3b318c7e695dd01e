// Package fileowner says who owns a file, as the safety layers that read
// keys, policies, configurations and saved state judge it: a file another
// user owns, or may write, is one that user can change under them.
package fileowner

import "io/fs"

// Other returns the owner of fi and whether it is not this process's
// (effective) user; an owner that cannot be read counts as another. Outside
// Unix, where a file's mode does not say who owns it, it reports no other
// owner (uid -1).
func Other(fi fs.FileInfo) (uid int, other bool) {
	uid, known := Of(fi)
	if !ModesSayWho {
		return -1, false
	}
	return uid, !known || uid != euid()
}

// Trusted reports whether fi's owner is this process's (effective) user or
// root, and returns the owner; an owner that cannot be read is not
// trusted. Outside Unix every file is (uid -1).
func Trusted(fi fs.FileInfo) (uid int, trusted bool) {
	uid, known := Of(fi)
	if !ModesSayWho {
		return -1, true
	}
	return uid, known && (uid == euid() || uid == 0)
}
