package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// openNoLinks opens rel beneath dirfd without following any symbolic link,
// in one step: a link anywhere on the path, even one planted between a
// check and this call, makes it fail.
func openNoLinks(dirfd int, rel string, flags int, mode uint32) (int, error) {
	how := &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(dirfd, rel, how)
	// EAGAIN: a rename or mount somewhere on the system raced the
	// resolution; the kernel asks for another try.
	for try := 0; errors.Is(err, unix.EAGAIN) && try < 8; try++ {
		fd, err = unix.Openat2(dirfd, rel, how)
	}
	var st unix.Stat_t
	if errors.Is(err, unix.ENOTDIR) && unix.Fstatat(dirfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		err = unix.ELOOP // O_DIRECTORY met the link first
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		return -1, fmt.Errorf("%s: a symbolic link is in the way (it appeared after the path was resolved, or the path goes through one); the file tools follow none when they open: resolve the path again", rel)
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// openResolved opens rel, a path resolve returned, beneath the
// workspace without following any link: the file opened is the one at
// the name the call was decided on, or none.
func (ts *Toolset) openResolved(rel string, flags int) (*os.File, error) {
	fd := -1
	var err error
	// Control holds the workspace's descriptor open while it is used, and
	// fails once the Toolset is closed.
	cerr := ts.dirConn.Control(func(wfd uintptr) { fd, err = openNoLinks(int(wfd), rel, flags, 0) })
	if cerr != nil {
		return nil, fmt.Errorf("workspace: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// openChild opens the entry name of dir, a directory at rel opened by
// openResolved or openChild, without following a link.
func (ts *Toolset) openChild(dir *os.File, rel, name string, flags int) (*os.File, error) {
	fd, err := openNoLinks(int(dir.Fd()), name, flags, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path.Join(rel, name)), nil
}

// workspaceFD returns a new descriptor of the workspace directory.
func (ts *Toolset) workspaceFD() (int, error) {
	fd := -1
	var err error
	if cerr := ts.dirConn.Control(func(wfd uintptr) { fd, err = unix.Dup(int(wfd)) }); cerr != nil {
		return -1, fmt.Errorf("workspace: %w", cerr)
	}
	return fd, err
}

// parentNoLinks opens the directory that holds rel, creating missing
// directories on the way when create is set, without following links.
func (ts *Toolset) parentNoLinks(rel string, create bool) (int, error) {
	fd, err := ts.workspaceFD()
	if err != nil {
		return -1, err
	}
	dir := path.Dir(rel)
	if dir == "." {
		return fd, nil
	}
	for _, elem := range strings.Split(dir, "/") {
		if create {
			err := unix.Mkdirat(fd, elem, 0o755)
			if err == nil {
				err = ts.giveToOwner(fd, elem, -1, -1)
			}
			if err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, &os.PathError{Op: "mkdir", Path: dir, Err: err}
			}
		}
		next, err := openNoLinks(fd, elem, unix.O_PATH|unix.O_DIRECTORY, 0)
		var st unix.Stat_t
		if errors.Is(err, unix.ENOTDIR) && unix.Fstatat(fd, elem, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = fmt.Errorf("%s: refusing to write through a symbolic link", dir)
		}
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

func (ts *Toolset) readForEdit(rel string) ([]byte, error) {
	dirfd, err := ts.parentNoLinks(rel, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	fd, err := openNoLinks(dirfd, path.Base(rel), unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if st.Size() > MaxWriteBytes {
		return nil, fmt.Errorf("%s is %d bytes; edit_file handles files up to %d", rel, st.Size(), MaxWriteBytes)
	}
	return io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
}

var tmpSeq atomic.Int64

// replace writes content to a temporary file beside rel and renames it over
// rel, so readers see the old or the new content, never a mix. Everything
// happens relative to one descriptor of rel's directory, reached without
// following a link: a link planted later is replaced, never followed.
func (ts *Toolset) replace(rel string, content []byte) error {
	dirfd, err := ts.parentNoLinks(rel, true)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	base := path.Base(rel)
	mode := uint32(0o644)
	uid, gid := -1, -1 // a new file is the workspace owner's
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			mode = st.Mode & 0o777
			uid, gid = int(st.Uid), int(st.Gid) // a replaced one keeps its owner
		case unix.S_IFLNK:
		default:
			return fmt.Errorf("%s is not a regular file", rel)
		}
	}
	tmp := ".clawtool-write-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(tmpSeq.Add(1), 10)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return &os.PathError{Op: "create", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	err = ts.giveToOwner(fd, "", uid, gid)
	if err == nil {
		_, err = f.Write(content)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, base)
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return &os.PathError{Op: "write", Path: rel, Err: err}
	}
	return nil
}

// giveToOwner makes the file name in dirfd (dirfd itself when name is
// empty) belong to uid and gid, or, when they are -1, to the workspace
// directory's owner, when this process is root: what the tools write
// belongs to the user whose workspace it is, as what a sandboxed command
// writes does (sandbox.Policy.Workspace), and a file the tools replace
// keeps its owner. Otherwise it does nothing: the file is the caller's.
func (ts *Toolset) giveToOwner(dirfd int, name string, uid, gid int) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if uid < 0 {
		wsfd, err := ts.workspaceFD()
		if err != nil {
			return err
		}
		var st unix.Stat_t
		err = unix.Fstat(wsfd, &st)
		unix.Close(wsfd)
		if err != nil {
			return err
		}
		uid, gid = int(st.Uid), int(st.Gid)
	}
	if uid == 0 && gid == 0 {
		return nil
	}
	if name == "" {
		return unix.Fchown(dirfd, uid, gid)
	}
	return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}
