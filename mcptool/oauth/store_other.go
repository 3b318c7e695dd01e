//go:build !unix

package oauth

import (
	"context"
	"io/fs"
	"os"
)

// openPrivate opens a record file for reading. Outside Unix the file's
// access is left to the directory's access control lists.
func openPrivate(name string) (*os.File, error) { return os.Open(name) }

// checkPrivate accepts every file outside Unix.
func checkPrivate(string, fs.FileInfo, string) error { return nil }

// lockFile locks nothing outside Unix: processes that share a FileStore
// there may each refresh.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
