//go:build !linux

package workspace

import (
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"sync/atomic"
)

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
