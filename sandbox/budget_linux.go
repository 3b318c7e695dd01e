package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// recvBudget receives the tmpfs of the workspace's write budget that the
// helper sends on its mount socket (helper.Config.Budget) once it has its
// configuration, before anything else it sends there. A helper that ends
// first (a setup error) closes its end: -1 and no error.
func recvBudget(h *helperProc) (int, error) {
	if h.mountW == nil {
		return -1, errors.New("the helper has no mount socket")
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(h.mountW.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		if n == 0 {
			return -1, nil
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return -1, errors.New("malformed budget message")
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 || buf[0] != 2 {
			for _, f := range fds {
				unix.Close(f)
			}
			return -1, errors.New("malformed budget message")
		}
		return fds[0], nil
	}
}

// budgetSpent reports whether the budget's tmpfs (a descriptor of it) has
// less than a sixteenth of its size or no inode left, as writeBudgetSpent
// judges /tmp.
func budgetSpent(fd int) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return false
	}
	size := st.Blocks * uint64(st.Bsize)
	return size > 0 && (st.Bavail*uint64(st.Bsize) < size/16 || st.Ffree == 0)
}

// applyBudget applies the upper layer on the budget's tmpfs (a descriptor
// of it) to the workspace ws, as its owner when the supervisor is root.
func applyBudget(budget int, ws string, protected []string, maxBytes int64) (applyResult, error) {
	upper, err := unix.Openat(budget, "upper", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return applyResult{}, fmt.Errorf("open the run's changes: %w", err)
	}
	defer unix.Close(upper)
	var owner *[2]int
	if os.Geteuid() == 0 {
		var st unix.Stat_t
		if err := unix.Stat(ws, &st); err != nil {
			return applyResult{}, fmt.Errorf("the workspace's owner: %w", err)
		}
		owner = &[2]int{int(st.Uid), int(st.Gid)}
	}
	return applyUpper(upper, ws, protected, owner, maxBytes)
}

// Bounds of the apply step, besides the budget's bytes (which the tmpfs
// bounds already, and the step counts again): entries read from the upper
// layer, and their depth.
const (
	maxApplyEntries = 1 << 20
	maxApplyDepth   = 256
)

// Bounds of Result.NotApplied: the supervisor holds it outside the run's
// memory limit and the exec tool shows it, so a run that makes tens of
// thousands of entries the apply step refuses (fifos with kilobyte paths)
// must not make it megabytes. Entries past maxNotApplied are counted in
// one last entry; a path over maxNotAppliedPath bytes keeps its start and
// its length.
const (
	maxNotApplied     = 64
	maxNotAppliedPath = 512
)

// An applyResult is what applying an upper layer did not do.
type applyResult struct {
	protected  []string // protected paths a change was refused under
	notApplied []string // "path: reason", at most maxNotApplied
	more       int      // refusals past maxNotApplied
}

// list returns notApplied with one entry counting the refusals past it.
func (r applyResult) list() []string {
	if r.more == 0 {
		return r.notApplied
	}
	return append(slices.Clone(r.notApplied), fmt.Sprintf("... and %d more changes not applied (the first %d are listed)", r.more, maxNotApplied))
}

// applyUpper applies the upper layer of a run's workspace overlay (upper,
// a directory descriptor) to the host workspace ws, as the overlay showed
// it to the run: files and directories made or changed (their contents,
// modes and modification times), symbolic links, hard links made in the
// run (the names that share an inode in the upper layer), deletions
// (whiteouts, character devices 0:0) and directories replaced whole
// (opaque: user.overlay.opaque "y"). Everything goes through an os.Root of
// ws, so that nothing is followed out of the workspace, and a file
// replaces its old name by a rename, so that a link in its place is
// replaced, never followed. A file is written as owner (uid and gid) when
// owner is not nil. Changes under a protected path, and any change that
// would remove or replace a directory above one, are not applied; nor are
// fifos, sockets, devices, setuid and setgid files, anything with other
// overlay metadata, entries deeper than maxApplyDepth or past
// maxApplyEntries and maxBytes of file data. The workspace root's own
// attributes are left as they are.
func applyUpper(upper int, ws string, protected []string, owner *[2]int, maxBytes int64) (applyResult, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return applyResult{}, err
	}
	defer root.Close()
	a := &applier{root: root, protected: protected, owner: owner, maxBytes: maxBytes, links: map[uint64]string{}}
	a.walk(upper, "", 0)
	slices.Sort(a.res.protected)
	a.res.protected = slices.Compact(a.res.protected)
	return a.res, a.stop
}

type applier struct {
	root      *os.Root
	protected []string
	owner     *[2]int
	maxBytes  int64
	entries   int
	bytes     int64
	links     map[uint64]string // upper inode → the name applied for it
	res       applyResult
	stop      error // a bound reached: nothing more is applied
}

func (a *applier) refuse(rel, why string) {
	if len(a.res.notApplied) >= maxNotApplied {
		a.res.more++
		return
	}
	if len(rel) > maxNotAppliedPath {
		rel = fmt.Sprintf("%s... (%d bytes)", strings.ToValidUTF8(rel[:maxNotAppliedPath], ""), len(rel))
	}
	if len(why) > maxNotAppliedPath {
		// An error's text may hold the path again.
		why = strings.ToValidUTF8(why[:maxNotAppliedPath], "") + "..."
	}
	a.res.notApplied = append(a.res.notApplied, rel+": "+why)
}

// protectedHit returns the protected paths a change of kind at rel would
// change: rel itself or anything under it when rel is, or is under, a
// protected path, and, for anything but a merged directory (a directory
// neither new in place of something else nor opaque), the protected paths
// below rel. Compared without regard to case, as the file tools do.
func (a *applier) protectedHit(rel string, mergedDir bool) []string {
	var hit []string
	low := strings.ToLower(rel)
	for _, q := range a.protected {
		lq := strings.ToLower(q)
		switch {
		case low == lq || strings.HasPrefix(low, lq+"/"):
			hit = append(hit, q)
		case strings.HasPrefix(lq, low+"/") && !mergedDir:
			hit = append(hit, q)
		}
	}
	return hit
}

func (a *applier) walk(dirfd int, rel string, depth int) {
	names, err := readNames(dirfd)
	if err != nil {
		a.refuse(orDot(rel), "cannot read the run's directory: "+err.Error())
		return
	}
	for _, name := range names {
		if a.stop != nil {
			return
		}
		p := name
		if rel != "" {
			p = rel + "/" + name
		}
		if a.entries++; a.entries > maxApplyEntries {
			a.stop = fmt.Errorf("more than %d entries to apply", maxApplyEntries)
			a.refuse(p, "past the apply step's entry bound; this and what follows are not applied")
			return
		}
		if depth >= maxApplyDepth {
			a.refuse(p, fmt.Sprintf("deeper than %d levels", maxApplyDepth))
			continue
		}
		a.entry(dirfd, name, p, depth)
	}
}

func orDot(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// readNames lists the directory dirfd, sorted.
func readNames(dirfd int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "upper")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// overlayXattrs reads the overlay's own xattrs (user.overlay.NAME, or
// trusted.overlay.NAME) of the entry name in dirfd, by NAME.
func overlayXattrs(dirfd int, name string) (map[string]string, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	buf := make([]byte, 4096)
	n, err := unix.Listxattr(proc, buf) // through the descriptor's link, to the entry itself
	if err != nil {
		if err == unix.ENOTSUP || err == unix.EPERM {
			return nil, nil // a symbolic link: no user xattrs
		}
		return nil, err
	}
	out := map[string]string{}
	for _, k := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(k, "user.overlay.") && !strings.HasPrefix(k, "trusted.overlay.") {
			continue
		}
		v := make([]byte, 256)
		m, err := unix.Getxattr(proc, k, v)
		if err != nil {
			return nil, err
		}
		out[k[strings.Index(k, ".overlay.")+len(".overlay."):]] = string(v[:m])
	}
	return out, nil
}

func (a *applier) entry(dirfd int, name, p string, depth int) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		a.refuse(p, "cannot read the run's entry: "+err.Error())
		return
	}
	typ := st.Mode & unix.S_IFMT
	if typ == unix.S_IFCHR && st.Rdev == 0 {
		// A whiteout: the run removed p.
		if hit := a.protectedHit(p, false); len(hit) > 0 {
			a.res.protected = append(a.res.protected, hit...)
			return
		}
		if err := a.root.RemoveAll(p); err != nil {
			a.refuse(p, "remove: "+err.Error())
		}
		return
	}
	xattrs, err := overlayXattrs(dirfd, name)
	if err != nil {
		a.refuse(p, "cannot read the overlay's metadata: "+err.Error())
		return
	}
	opaque := false
	for k, v := range xattrs {
		switch {
		case k == "opaque" && v == "y" && typ == unix.S_IFDIR:
			opaque = true
		case k == "origin", k == "impure":
			// origin and impure describe where a copy came from and
			// that a directory holds copies: nothing to apply.
		default:
			a.refuse(p, "overlay metadata "+k+" is not modelled")
			return
		}
	}
	host, hostErr := a.root.Lstat(p)
	exists := hostErr == nil
	switch typ {
	case unix.S_IFDIR:
		merged := !opaque && (!exists || host.IsDir())
		if hit := a.protectedHit(p, merged); len(hit) > 0 {
			a.res.protected = append(a.res.protected, hit...)
			return
		}
		if exists && !merged {
			if err := a.root.RemoveAll(p); err != nil {
				a.refuse(p, "replace: "+err.Error())
				return
			}
			exists = false
		}
		mode := fileMode(st.Mode)
		const modeBits = fs.ModePerm | fs.ModeSticky | fs.ModeSetgid
		cur := fs.FileMode(0o700)
		if exists {
			cur = host.Mode() & modeBits
		} else {
			if err := a.root.Mkdir(p, 0o700); err != nil {
				a.refuse(p, "mkdir: "+err.Error())
				return
			}
			a.chown(p, false)
		}
		// The mode is set after the directory's entries are written: a
		// supervisor that is not root needs to write and search it until
		// then, whatever mode the run gave it.
		if a.owner == nil && cur&0o300 != 0o300 {
			if a.root.Chmod(p, cur|0o700) == nil {
				cur |= 0o700
			}
		}
		sub, err := openUpper(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, st.Mode, 0o500)
		if err != nil {
			a.refuse(p, "cannot open the run's directory: "+err.Error())
		} else {
			a.walk(sub, p, depth+1)
			unix.Close(sub)
		}
		if cur != mode {
			if err := a.root.Chmod(p, mode); err != nil {
				a.refuse(p, "chmod: "+err.Error())
			}
		}
	case unix.S_IFREG:
		if hit := a.protectedHit(p, false); len(hit) > 0 {
			a.res.protected = append(a.res.protected, hit...)
			return
		}
		if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			a.refuse(p, "a setuid or setgid file is not applied")
			return
		}
		if st.Nlink > 1 {
			if first, ok := a.links[st.Ino]; ok {
				if exists {
					if err := a.root.RemoveAll(p); err != nil {
						a.refuse(p, "replace: "+err.Error())
						return
					}
				}
				if err := a.root.Link(first, p); err != nil {
					a.refuse(p, "link: "+err.Error())
				}
				return
			}
		}
		if a.bytes += st.Size; a.bytes > a.maxBytes {
			a.stop = fmt.Errorf("more than the budget of %d bytes to apply", a.maxBytes)
			a.refuse(p, "past the apply step's byte bound; this and what follows are not applied")
			return
		}
		if why := a.writeFile(dirfd, name, p, &st, exists && host.IsDir()); why != "" {
			a.refuse(p, why)
			return
		}
		if st.Nlink > 1 {
			a.links[st.Ino] = p
		}
	case unix.S_IFLNK:
		if hit := a.protectedHit(p, false); len(hit) > 0 {
			a.res.protected = append(a.res.protected, hit...)
			return
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			a.refuse(p, "readlink: "+err.Error())
			return
		}
		if exists {
			if err := a.root.RemoveAll(p); err != nil {
				a.refuse(p, "replace: "+err.Error())
				return
			}
		}
		// Made, never followed: the target is the run's text.
		if err := a.root.Symlink(string(buf[:n]), p); err != nil {
			a.refuse(p, "symlink: "+err.Error())
			return
		}
		a.chown(p, true)
	case unix.S_IFIFO:
		a.refuse(p, "a fifo is not applied")
	case unix.S_IFSOCK:
		a.refuse(p, "a socket is not applied")
	default:
		a.refuse(p, "a device is not applied")
	}
}

// openUpper opens name in the upper directory dirfd; a caller that is not
// root may have to give itself read permission first (add) on a file the
// run made unreadable.
func openUpper(dirfd int, name string, flags int, mode uint32, add uint32) (int, error) {
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.EACCES {
		if unix.Fchmodat(dirfd, name, (mode&0o7777)|add, 0) == nil {
			fd, err = unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	}
	return fd, err
}

// writeFile writes the upper file name as p: a new file beside p, its
// contents, mode, owner and modification time, renamed onto p (a
// directory in the way removed first).
func (a *applier) writeFile(dirfd int, name, p string, st *unix.Stat_t, dirInTheWay bool) string {
	src, err := openUpper(dirfd, name, unix.O_RDONLY, st.Mode, 0o400)
	if err != nil {
		return "cannot open the run's file: " + err.Error()
	}
	in := os.NewFile(uintptr(src), name)
	defer in.Close()
	tmp := path.Join(path.Dir(p), ".clawtool-apply-"+strconv.FormatUint(st.Ino, 36)+"-"+path.Base(p))
	if len(path.Base(tmp)) > 255 {
		tmp = path.Join(path.Dir(p), ".clawtool-apply-"+strconv.FormatUint(st.Ino, 36))
	}
	out, err := a.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "create: " + err.Error()
	}
	_, err = io.Copy(out, io.LimitReader(in, st.Size))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = a.root.Chmod(tmp, fileMode(st.Mode))
	}
	if err == nil {
		mtime := time.Unix(st.Mtim.Unix())
		err = a.root.Chtimes(tmp, mtime, mtime)
	}
	if err == nil && a.owner != nil {
		err = a.root.Lchown(tmp, a.owner[0], a.owner[1])
	}
	if err == nil && dirInTheWay {
		err = a.root.RemoveAll(p)
	}
	if err == nil {
		err = a.root.Rename(tmp, p)
	}
	if err != nil {
		a.root.Remove(tmp)
		return "write: " + err.Error()
	}
	return ""
}

func (a *applier) chown(p string, link bool) {
	if a.owner == nil {
		return
	}
	var err error
	if link {
		err = a.root.Lchown(p, a.owner[0], a.owner[1])
	} else {
		err = a.root.Chown(p, a.owner[0], a.owner[1])
	}
	if err != nil {
		a.refuse(p, "chown: "+err.Error())
	}
}

// fileMode converts a stat mode's permission, sticky and setgid bits (a
// directory may keep setgid) to an fs.FileMode.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	return mode
}
