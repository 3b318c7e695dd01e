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
	return applyUpperRacing(upper, ws, protected, owner, maxBytes, nil)
}

// applyUpperRacing is applyUpper calling before, when not nil, with each
// entry's path before the entry is applied: a test's stand-in for a
// writer changing the workspace while the step applies.
func applyUpperRacing(upper int, ws string, protected []string, owner *[2]int, maxBytes int64, before func(string)) (applyResult, error) {
	wsfd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return applyResult{}, &os.PathError{Op: "open", Path: ws, Err: err}
	}
	root := &noFollowRoot{ws: wsfd, dirFD: -1}
	defer root.close()
	a := &applier{root: root, protected: protected, owner: owner, maxBytes: maxBytes, links: map[uint64]string{}, before: before}
	a.walk(upper, "", 0)
	slices.Sort(a.res.protected)
	a.res.protected = slices.Compact(a.res.protected)
	return a.res, a.stop
}

type applier struct {
	root      *noFollowRoot
	protected []string
	owner     *[2]int
	maxBytes  int64
	entries   int
	bytes     int64
	links     map[uint64]string // upper inode → the name applied for it
	res       applyResult
	stop      error // a bound reached: nothing more is applied
	before    func(string)
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
		if a.before != nil {
			a.before(p)
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
	if hostErr != nil && !errors.Is(hostErr, fs.ErrNotExist) {
		// The way to p is not the workspace's own directories (a link
		// swapped in while this step applies): nothing is written there.
		a.refuse(p, hostErr.Error())
		return
	}
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
			a.chown(p)
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
		a.chown(p)
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
	out, err := a.root.Create(tmp)
	if err != nil {
		return "create: " + err.Error()
	}
	_, err = io.Copy(out, io.LimitReader(in, st.Size))
	if err == nil {
		err = out.Chmod(fileMode(st.Mode))
	}
	if err == nil && a.owner != nil {
		err = out.Chown(a.owner[0], a.owner[1])
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = a.root.Chtimes(tmp, time.Unix(st.Mtim.Unix()))
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

// chown gives p, a directory or symbolic link the step made, to the
// workspace's owner when the step writes as one.
func (a *applier) chown(p string) {
	if a.owner == nil {
		return
	}
	if err := a.root.Lchown(p, a.owner[0], a.owner[1]); err != nil {
		a.refuse(p, "chown: "+err.Error())
	}
}

// A noFollowRoot is the workspace as the apply step writes it: each
// operation opens the directory holding its path from the workspace's
// descriptor following no symbolic link (openat2, RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS) and acts on the last name relative to that
// directory, never following a link there either. An os.Root follows a
// link that stays inside it, so a directory the step had checked,
// swapped for a link to .git/hooks by another writer of the workspace
// while the step applied, led its writes into a protected path
// (TestApplyRaceSymlinkSwap); now such a write fails (ELOOP) and is
// listed as not applied. The directory last opened is kept for the next
// operation in it (the step applies a directory's entries one after
// another); it is held by descriptor, so a swap after it was opened
// sends nothing elsewhere.
type noFollowRoot struct {
	ws      int // the workspace's directory
	dirPath string
	dirFD   int // the directory of dirPath, or -1
}

func (r *noFollowRoot) close() {
	r.drop()
	unix.Close(r.ws)
}

func (r *noFollowRoot) drop() {
	if r.dirFD >= 0 {
		unix.Close(r.dirFD)
	}
	r.dirPath, r.dirFD = "", -1
}

// openDir opens dir (relative to the workspace, "" for itself) following
// no link; the caller closes what is not r.ws.
func (r *noFollowRoot) openDir(dir string) (int, error) {
	if dir == "" || dir == "." {
		return r.ws, nil
	}
	for {
		fd, err := unix.Openat2(r.ws, dir, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.EXDEV {
				err = fmt.Errorf("%w: a symbolic link or a file is in the way, not followed", err)
			}
			return -1, &os.PathError{Op: "open", Path: dir, Err: err}
		}
		return fd, nil
	}
}

// at returns the directory holding p and p's last name.
func (r *noFollowRoot) at(p string) (int, string, error) {
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return r.ws, name, nil
	}
	if r.dirFD >= 0 && r.dirPath == dir {
		return r.dirFD, name, nil
	}
	fd, err := r.openDir(dir)
	if err != nil {
		return -1, "", err
	}
	r.drop()
	r.dirPath, r.dirFD = dir, fd
	return fd, name, nil
}

func pathErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: p, Err: err}
}

// Lstat returns p's own attributes.
func (r *noFollowRoot) Lstat(p string) (fs.FileInfo, error) {
	d, name, err := r.at(p)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, pathErr("lstat", p, err)
	}
	return statInfo{name: name, st: st}, nil
}

// RemoveAll removes p and what it holds, following no link.
func (r *noFollowRoot) RemoveAll(p string) error {
	if r.dirFD >= 0 && (r.dirPath == p || strings.HasPrefix(r.dirPath, p+"/")) {
		r.drop()
	}
	d, name, err := r.at(p)
	if err != nil {
		return err
	}
	// An os.Root of the directory holding p: its RemoveAll follows no
	// link, and the root, opened from the descriptor, is that directory
	// whatever its path has become.
	dr, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(d))
	if err != nil {
		return err
	}
	defer dr.Close()
	return dr.RemoveAll(name)
}

// Mkdir makes the directory p.
func (r *noFollowRoot) Mkdir(p string, mode uint32) error {
	d, name, err := r.at(p)
	if err != nil {
		return err
	}
	return pathErr("mkdir", p, unix.Mkdirat(d, name, mode))
}

// Chmod sets the mode of the directory p.
func (r *noFollowRoot) Chmod(p string, mode fs.FileMode) error {
	d, name, err := r.at(p)
	if err != nil {
		return err
	}
	fd, err := unix.Openat(d, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return pathErr("chmod", p, err)
	}
	defer unix.Close(fd)
	return pathErr("chmod", p, unix.Fchmod(fd, unixMode(mode)))
}

// Create makes the new file p (O_EXCL: never through a link), mode 0600.
func (r *noFollowRoot) Create(p string) (*os.File, error) {
	d, name, err := r.at(p)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Openat(d, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

// Chtimes sets p's access and modification times to t, following no link.
func (r *noFollowRoot) Chtimes(p string, t time.Time) error {
	d, name, err := r.at(p)
	if err != nil {
		return err
	}
	ts := unix.NsecToTimespec(t.UnixNano())
	return pathErr("chtimes", p, unix.UtimesNanoAt(d, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW))
}

// Lchown gives p itself (a link is not followed) to uid and gid.
func (r *noFollowRoot) Lchown(p string, uid, gid int) error {
	d, name, err := r.at(p)
	if err != nil {
		return err
	}
	return pathErr("lchown", p, unix.Fchownat(d, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW))
}

// Rename renames from to to, both in the directory holding to.
func (r *noFollowRoot) Rename(from, to string) error {
	if path.Dir(from) != path.Dir(to) {
		return pathErr("rename", from, unix.EXDEV)
	}
	d, name, err := r.at(to)
	if err != nil {
		return err
	}
	return pathErr("rename", to, unix.Renameat(d, path.Base(from), d, name))
}

// Remove removes the file p.
func (r *noFollowRoot) Remove(p string) error {
	d, name, err := r.at(p)
	if err != nil {
		return err
	}
	return pathErr("remove", p, unix.Unlinkat(d, name, 0))
}

// Link makes to another name of the file from (a link is not followed).
func (r *noFollowRoot) Link(from, to string) error {
	fd, err := r.openDir(path.Dir(from))
	if err != nil {
		return err
	}
	if fd != r.ws {
		defer unix.Close(fd)
	}
	d, name, err := r.at(to)
	if err != nil {
		return err
	}
	return pathErr("link", to, unix.Linkat(fd, path.Base(from), d, name, 0))
}

// Symlink makes p a symbolic link to target.
func (r *noFollowRoot) Symlink(target, p string) error {
	d, name, err := r.at(p)
	if err != nil {
		return err
	}
	return pathErr("symlink", p, unix.Symlinkat(target, d, name))
}

// statInfo is an fs.FileInfo of a unix.Stat_t.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s statInfo) Sys() any           { return &s.st }
func (s statInfo) Mode() fs.FileMode {
	m := fileMode(s.st.Mode)
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}

// unixMode converts fileMode's bits back to a stat mode's.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	if m&fs.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	return u
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
