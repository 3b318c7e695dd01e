//go:build !unix

package runstore

import "io/fs"

// modesSayWho is whether a file's mode bits say who may write it.
const modesSayWho = false

// otherOwner reports no other owner outside Unix, where file modes do
// not say who owns a file.
func otherOwner(fs.FileInfo) (uid int, other bool) { return -1, false }
