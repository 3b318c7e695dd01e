package toolsearch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/miniopenclaw/tool/internal/atomicfile"
	"github.com/miniopenclaw/tool/internal/boundedfile"
	"github.com/miniopenclaw/tool/internal/fileowner"
	"github.com/miniopenclaw/tool/internal/regularfile"
)

// The caches of this package (embeddings of tool definitions, converted
// word vectors) decide which tools a model is shown. Whoever may change a
// cache's files may put their pick first for the queries they guess, so a
// cache is read only where no one but this process's user and root may
// change it: the cache directory, every directory below it down to the
// file, and the file itself. Anything else is a miss, never an error: the
// cache is an optimization, and a miss costs an embedding or a
// conversion.

// errNotPrivate is why a cache entry is not read or written.
var errNotPrivate = errors.New("toolsearch: cache entry other users may change")

// private reports whether fi may be changed only by this process's user
// or root: neither its group nor others may write it, and one of them owns
// it.
func private(fi fs.FileInfo) bool {
	if !fileowner.ModesSayWho {
		return true
	}
	_, trusted := fileowner.Trusted(fi)
	return trusted && fi.Mode().Perm()&0o022 == 0
}

// privateDirs checks the directories from root down to dir (which must
// be root or below it): root as it resolves (a user's cache directory may
// be a link), each below it as it is, a directory and not a link.
func privateDirs(root, dir string) error {
	fi, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !fi.IsDir() || !private(fi) {
		return errNotPrivate
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("toolsearch: %s is not under the cache directory %s", dir, root)
	}
	if rel == "." {
		return nil
	}
	at := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		fi, err := os.Lstat(at)
		if err != nil {
			return err
		}
		if !fi.IsDir() || !private(fi) {
			return errNotPrivate
		}
	}
	return nil
}

// readCached reads the file path of the cache directory root, at most max
// bytes, when it and the directories above it up to root are private: a
// regular file, opened without following a link and without waiting (a
// FIFO), judged on the file opened, and read no further than max.
func readCached(root, path string, max int64) ([]byte, error) {
	if err := privateDirs(root, filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, fi, err := regularfile.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !private(fi) {
		return nil, errNotPrivate
	}
	return readSized(f, fi, path, max)
}

// readSized reads f whole into one buffer of the size fi gives (the heap
// holds a large table once, not the copies a growing buffer leaves), at
// most max bytes: a file longer than max, or than fi said, is refused.
func readSized(f *os.File, fi fs.FileInfo, name string, max int64) ([]byte, error) {
	if fi.Size() > max {
		return nil, &boundedfile.TooLargeError{Name: name, Max: max}
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if n, _ := f.Read(make([]byte, 1)); n > 0 {
		return nil, fmt.Errorf("%s: grew while read", name)
	}
	return data, nil
}

// writeCached writes data to the file path of the cache directory root so
// that a reader sees all of it or none (a cache: not synced), making the
// directories it needs (private), and writes nothing where readCached
// would not read.
func writeCached(root, path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := privateDirs(root, filepath.Dir(path)); err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}
