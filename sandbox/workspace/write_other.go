//go:build !linux

package workspace

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"sync/atomic"
	"syscall"
)

// openResolved opens rel, a path resolve returned, through the os.Root,
// and refuses it when a component is a symbolic link once it is open.
// Unlike Linux's openat2, this leaves a window: a parent swapped for a
// link and back while the file is opened goes unseen.
func (ts *Toolset) openResolved(rel string, flags int) (*os.File, error) {
	f, err := ts.root.OpenFile(rel, flags|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	for p := rel; p != "." && p != "/"; p = path.Dir(p) {
		if st, err := ts.root.Lstat(p); err != nil || st.Mode()&fs.ModeSymlink != 0 {
			f.Close()
			return nil, fmt.Errorf("%s: a symbolic link is in the way (it appeared after the path was resolved); resolve the path again", rel)
		}
	}
	return f, nil
}

// openChild opens the entry name of dir, the directory rel.
func (ts *Toolset) openChild(dir *os.File, rel, name string, flags int) (*os.File, error) {
	return ts.openResolved(path.Join(rel, name), flags)
}

// readForEdit reads rel through the os.Root, refusing a symbolic link.
func (ts *Toolset) readForEdit(rel string) ([]byte, error) {
	if st, err := ts.root.Lstat(rel); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	f, err := ts.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
}

var tmpSeq atomic.Int64

// replace writes content beside rel and renames it over rel.
func (ts *Toolset) replace(rel string, content []byte) error {
	if st, err := ts.root.Lstat(rel); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", rel)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := ts.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := path.Join(path.Dir(rel), ".clawtool-write-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(tmpSeq.Add(1), 10))
	f, err := ts.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ts.root.Rename(tmp, rel)
	}
	if err != nil {
		ts.root.Remove(tmp)
	}
	return err
}
