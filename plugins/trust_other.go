//go:build !unix

package plugins

import "io/fs"

// checkTrusted accepts every file where file modes do not say who may
// write it.
func checkTrusted(string, fs.FileInfo) error { return nil }
