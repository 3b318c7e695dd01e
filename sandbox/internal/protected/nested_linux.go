package protected

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// findRepos lists the directories below ws (relative, slash-separated)
// holding a .git entry, within b; see [Nested]. It reads each directory
// with getdents64 into one buffer, keeps only the names of directories,
// and opens each below its parent's descriptor without following a
// symbolic link: at most b.Depth+1 descriptors are open at once.
func findRepos(ws string, b Bounds) ([]string, error) {
	fd, err := syscall.Open(ws, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err == syscall.ENOENT {
		// No workspace: nothing to protect, and the run's setup fails
		// on it with its own error.
		return nil, nil
	}
	if err != nil {
		return nil, &pathError{"open", ".", err}
	}
	defer syscall.Close(fd)
	w := &finder{b: b, buf: make([]byte, 32<<10)}
	if err := w.dir(fd, "", 0); err != nil {
		return nil, err
	}
	return w.repos, nil
}

type finder struct {
	b     Bounds
	seen  int
	buf   []byte
	repos []string
}

// dir reads the directory fd (rel below the workspace, depth deep) and
// then each of its subdirectories.
func (w *finder) dir(fd int, rel string, depth int) error {
	var subs []string
	hasGit := false
	for {
		n, err := syscall.Getdents(fd, w.buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &pathError{"read", orDot(rel), err}
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off i64, reclen u16,
			// type u8, name NUL-terminated.
			reclen := int(*(*uint16)(unsafe.Pointer(&w.buf[off+16])))
			typ := w.buf[off+18]
			name := w.buf[off+19 : off+reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			off += reclen
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if w.seen++; w.seen > w.b.Entries {
				return &LimitError{Limit: "entries", Value: w.b.Entries, Path: orDot(rel)}
			}
			if string(name) == ".git" {
				hasGit = true
				continue
			}
			if typ == syscall.DT_UNKNOWN {
				var st unix.Stat_t
				if err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue // gone since it was listed
				}
				if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
					typ = syscall.DT_DIR
				}
			}
			if typ != syscall.DT_DIR {
				continue
			}
			if depth+1 > w.b.Depth {
				return &LimitError{Limit: "depth", Value: w.b.Depth, Path: path(rel, string(name))}
			}
			subs = append(subs, string(name))
		}
	}
	if hasGit && rel != "" {
		w.repos = append(w.repos, rel)
	}
	for _, name := range subs {
		sub, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		switch err {
		case nil:
		case syscall.ENOENT, syscall.ENOTDIR, syscall.ELOOP:
			continue // gone, or no longer a directory, since it was listed
		default:
			return &pathError{"open", path(rel, name), err}
		}
		err = w.dir(sub, path(rel, name), depth+1)
		syscall.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// A pathError is an error reading the workspace, named by the path
// relative to it.
type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }
