//go:build !unix

package policy

import "io/fs"

// otherOwner reports no other owner outside Unix, where file modes do
// not say who owns a file.
func otherOwner(fs.FileInfo) (uid int, other bool) { return -1, false }
