// Package atomicfile replaces a file's content so that a reader sees the
// old content or the new one, never a part of either.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces the file at path with data: it writes a temporary file
// in path's directory (mode 0600, named "."+base+".tmp" and a random
// suffix, so it never matches a pattern that ends in path's extension)
// and renames it over path. Nothing is synced: after a crash path holds
// the old content, the new, or (on some file systems) nothing, never a
// part; use [WriteSynced] for state that must survive one. On an error the
// temporary file is removed and path is unchanged. The directory must
// exist.
func Write(path string, data []byte) error {
	return write(path, data, false)
}

// WriteSynced is [Write] made durable: the temporary file is synced
// before the rename and the directory after it, so once WriteSynced
// returns nil the new content survives a crash. A failure to sync the
// directory is not reported: the rename has happened and the content is
// in place; on the file systems where a directory cannot be synced the
// rename is durable by other means.
func WriteSynced(path string, data []byte) error {
	return write(path, data, true)
}

func write(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if durable {
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}
