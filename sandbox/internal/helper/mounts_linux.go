package helper

import (
	"syscall"
	"unsafe"
)

// newRoot is where the helper assembles the root before pivot_root; it lives
// on a tmpfs mounted over /tmp in the helper's private mount namespace.
const newRoot = "/tmp/.sandbox-root"

// Mount API flags (linux/mount.h, linux/fcntl.h, linux/openat2.h).
const (
	openTreeClone        = 1
	openTreeCloexec      = syscall.O_CLOEXEC
	atEmptyPath          = 0x1000
	atRecursive          = 0x8000
	mountAttrRdonly      = 0x1
	mountAttrNosuid      = 0x2
	mountAttrNodev       = 0x4
	moveMountFEmptyPath  = 0x4
	moveMountTEmptyPath  = 0x40
	resolveNoMagiclinks  = 0x02
	resolveNoSymlinks    = 0x04
	resolveBeneath       = 0x08
	resolveInRoot        = 0x10
	oPath                = 0x200000
	mountAttrSize        = 32
	openHowSize          = 24
	mountPointDirMode    = 0o755
	mountPointFileMode   = 0o644
	stagingDirectoryMode = 0o700
)

type mountAttr struct {
	set, clr, propagation, usernsFD uint64
}

type openHow struct {
	flags, mode, resolve uint64
}

func ptr(s string) (*byte, error) { return syscall.BytePtrFromString(s) }

func openTree(dirfd int, path string, flags uintptr) (int, error) {
	p, err := ptr(path)
	if err != nil {
		return -1, err
	}
	fd, _, e := syscall.RawSyscall(sysOpenTree, uintptr(dirfd), uintptr(unsafe.Pointer(p)), flags)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func mountSetattr(dirfd int, path string, flags uintptr, set uint64) error {
	p, err := ptr(path)
	if err != nil {
		return err
	}
	attr := mountAttr{set: set}
	if _, _, e := syscall.RawSyscall6(sysMountSetattr, uintptr(dirfd), uintptr(unsafe.Pointer(p)), flags,
		uintptr(unsafe.Pointer(&attr)), mountAttrSize, 0); e != 0 {
		return e
	}
	return nil
}

func moveMount(fromfd int, tofd int, to string, flags uintptr) error {
	from, _ := ptr("")
	t, err := ptr(to)
	if err != nil {
		return err
	}
	if _, _, e := syscall.RawSyscall6(sysMoveMount, uintptr(fromfd), uintptr(unsafe.Pointer(from)),
		uintptr(tofd), uintptr(unsafe.Pointer(t)), flags, 0); e != 0 {
		return e
	}
	return nil
}

func openat2(dirfd int, path string, how *openHow) (int, error) {
	p, err := ptr(path)
	if err != nil {
		return -1, err
	}
	fd, _, e := syscall.RawSyscall6(sysOpenat2, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(how)), openHowSize, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// hostCopy is where prepareRoot keeps an unmodified copy of the host's
// mount tree, in the staging tmpfs beside newRoot: the trees a policy
// binds are looked up in it after the claim, when /tmp is covered.
const hostCopy = "/tmp/.sandbox-host"

// deviceNodes are the nodes of the host's /dev that the sandbox's /dev holds.
var deviceNodes = []string{"null", "zero", "full", "random", "urandom"}

// AlwaysHidden are the daemon-socket directories every sandbox covers with
// an empty tmpfs; prepareRoot covers them before the configuration arrives,
// and Config.HideDirs names the others.
var AlwaysHidden = []string{"/run", "/var/run"}

// A preparedRoot is the part of the sandbox's file system that does not
// depend on the policy, assembled by prepareRoot under newRoot, and the
// handle finishRoot looks the policy's paths up through.
type preparedRoot struct {
	host int // O_PATH descriptor of hostCopy's root
	// childNS is the PID namespace the command is forked into (ForkEnv),
	// or -1 when the helper becomes the command.
	childNS int
}

// prepareRoot assembles everything of the root that is the same for every
// run, so that a spare does it before it is claimed: the root's tmpfs at
// newRoot with a read-only, nosuid, nodev copy of each of RootDirs (see
// systemRoot); tmpfs over AlwaysHidden where the root has them; a
// minimal /dev; a fresh /proc. It also keeps a copy of the host's tree at
// hostCopy, since the staging tmpfs covers the host's /tmp, where a
// workspace may live. Nothing of a run has been read yet: the copies are of
// the mount tree the helper's namespace got at its clone, as before.
//
// With fork (ForkEnv), the helper's children get a PID namespace of their
// own and /proc is that namespace's.
func prepareRoot(fork bool) (*preparedRoot, error) {
	if err := mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return nil, fail("make mounts private", err)
	}
	// Clone what is needed of the host before /tmp is covered.
	host, err := openTree(atFDCWD, "/", openTreeClone|openTreeCloexec|atRecursive)
	if err != nil {
		return nil, fail("copy the host's mount tree", err)
	}
	defer closeFD(host)
	var devices []int
	defer func() {
		for _, fd := range devices {
			closeFD(fd)
		}
	}()
	for _, d := range deviceNodes {
		fd, err := cloneTree(atFDCWD, "/dev/"+d, "/dev/"+d, mountAttrNosuid)
		if err != nil {
			return nil, err
		}
		devices = append(devices, fd)
	}

	if err := mount("sandbox", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k,mode=0700"); err != nil {
		return nil, fail("mount staging tmpfs", err)
	}
	if err := mkdir(newRoot, stagingDirectoryMode); err != nil {
		return nil, fail("staging directory", err)
	}
	// Detached with the old root by finishRoot's pivot.
	if err := mkdir(hostCopy, stagingDirectoryMode); err != nil {
		return nil, fail("staging directory", err)
	}
	if err := moveMount(host, atFDCWD, hostCopy, moveMountFEmptyPath); err != nil {
		return nil, fail("keep the host's mount tree", err)
	}
	hostFD, err := openat(atFDCWD, hostCopy, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fail("open the host's mount tree", err)
	}
	pr := &preparedRoot{host: hostFD, childNS: -1}
	if err := systemRoot(); err != nil {
		pr.close()
		return nil, err
	}
	if err := hideDirs(AlwaysHidden); err != nil {
		pr.close()
		return nil, err
	}
	if err := tmpfs("/dev", "size=64k,mode=0755", syscall.MS_NOEXEC); err != nil {
		pr.close()
		return nil, err
	}
	for _, link := range [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}} {
		if err := symlink(link[0], newRoot+"/dev/"+link[1]); err != nil {
			pr.close()
			return nil, fail("/dev/"+link[1], err)
		}
	}
	if fork {
		pr.childNS, err = childProc(newRoot + "/proc")
	} else {
		err = mount("proc", newRoot+"/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
	}
	if err != nil {
		pr.close()
		return nil, fail("mount /proc", err)
	}
	for i, d := range deviceNodes {
		if err := attachTree(devices[i], "/dev/"+d); err != nil {
			pr.close()
			return nil, err
		}
	}
	return pr, nil
}

// systemRoot makes the root at newRoot: a tmpfs holding RootDirs, each a
// read-only, nosuid, nodev copy of the host's tree there (or the same
// symbolic link, as /bin is on a merged /usr), and the mount points of
// /tmp, /proc and /dev. finishRoot makes the policy's mount points on it
// and then makes it read-only. Before, the root was a read-only copy of
// the host's whole mount tree: a run's /proc/self/mountinfo (and
// listmount) listed every mount point of the host, where Landlock
// already refused to read, and a run without Landlock could read it all.
func systemRoot() error {
	if err := mount("tmpfs", newRoot, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k,nr_inodes=1024,mode=0755"); err != nil {
		return fail("mount the root's tmpfs", err)
	}
	for _, d := range RootDirs {
		var st syscall.Stat_t
		if err := stat(hostCopy+d, &st, true); err == syscall.ENOENT {
			continue
		} else if err != nil {
			return fail("look at "+d, err)
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFLNK:
			target, err := readlink(hostCopy + d)
			if err != nil {
				return fail("read the link "+d, err)
			}
			if err := symlink(target, newRoot+d); err != nil {
				return fail("link "+d, err)
			}
		case syscall.S_IFDIR:
			tree, err := cloneTree(atFDCWD, hostCopy+d, d, mountAttrRdonly|mountAttrNosuid|mountAttrNodev)
			if err != nil {
				return err
			}
			if err := attachTree(tree, d); err != nil {
				return err
			}
		}
	}
	for _, d := range []string{"/tmp", "/proc", "/dev"} {
		if err := mkdir(newRoot+d, mountPointDirMode); err != nil {
			return fail("mount point for "+d, err)
		}
	}
	return nil
}

// close closes the descriptor of the host's tree; childNS stays open for
// run (it is close-on-exec).
func (pr *preparedRoot) close() { closeFD(pr.host) }

// The file system context API (linux/mount.h) and pidfd namespaces.
const (
	sysFsopen    = 430
	sysFsconfig  = 431
	sysFsmount   = 432
	sysPidfdOpen = 434

	// PIDFD_GET_PID_NAMESPACE and PIDFD_GET_PID_FOR_CHILDREN_NAMESPACE
	// (linux/pidfd.h): _IO(0xFF, 5) and _IO(0xFF, 6).
	pidfdGetPIDNamespace            = 0xFF05
	pidfdGetPIDForChildrenNamespace = 0xFF06

	fsopenCloexec     = 1
	fsconfigSetFD     = 5
	fsconfigCmdCreate = 6
	fsmountCloexec    = 1
	mountAttrNoexec   = 0x8
)

// childProc makes a PID namespace for the helper's children and mounts
// its procfs at target (only creates it when target is empty: the probe).
// It returns a descriptor of the namespace, which the helper enters for
// its children (setns) just before it forks the command: until then its
// children stay in its own namespace, since a thread the Go runtime might
// clone from this one must be in the PID namespace of its process. The
// namespace is reached through a pidfd of the helper (Linux 6.11), since
// /proc/self/ns/pid_for_children opens only once the namespace has its
// init, and its procfs is mounted with the "pidns" option (Linux 6.15),
// since a procfs is otherwise of its mounter's namespace.
func childProc(target string) (ns int, err error) {
	if _, err := sys(syscall.SYS_UNSHARE, syscall.CLONE_NEWPID); err != nil {
		return -1, fail("new PID namespace", err)
	}
	self, err := sys(sysPidfdOpen, uintptr(syscall.Getpid()), 0)
	if err != nil {
		return -1, fail("pidfd", err)
	}
	defer closeFD(int(self))
	own, err := sys(syscall.SYS_IOCTL, self, pidfdGetPIDNamespace)
	if err != nil {
		return -1, fail("open the PID namespace", err)
	}
	defer closeFD(int(own))
	child, err := sys(syscall.SYS_IOCTL, self, pidfdGetPIDForChildrenNamespace)
	if err != nil {
		return -1, fail("open the children's PID namespace", err)
	}
	ns = int(child)
	defer func() {
		if err != nil {
			closeFD(ns)
		}
	}()
	if err := mountProcOf(ns, target); err != nil {
		return -1, err
	}
	if _, err := sys(sysSetns, own, syscall.CLONE_NEWPID); err != nil {
		return -1, fail("keep children in the PID namespace", err)
	}
	return ns, nil
}

// mountProcOf mounts the procfs of the PID namespace ns at target, or
// only creates it, detached, when target is empty.
func mountProcOf(ns int, target string) error {
	name, _ := ptr("proc")
	fsfd, err := sys(sysFsopen, p(name), fsopenCloexec)
	if err != nil {
		return fail("fsopen", err)
	}
	defer closeFD(int(fsfd))
	key, _ := ptr("pidns")
	if _, err := sys(sysFsconfig, fsfd, fsconfigSetFD, p(key), 0, uintptr(ns)); err != nil {
		return fail("procfs pidns option", err)
	}
	if _, err := sys(sysFsconfig, fsfd, fsconfigCmdCreate, 0, 0, 0); err != nil {
		return fail("create procfs", err)
	}
	// fsmount also checks that the mount reveals nothing the namespace's
	// procfs mounts hide.
	mnt, err := sys(sysFsmount, fsfd, fsmountCloexec, mountAttrNosuid|mountAttrNodev|mountAttrNoexec)
	if err != nil {
		return fail("fsmount", err)
	}
	defer closeFD(int(mnt))
	if target == "" {
		return nil
	}
	return moveMount(int(mnt), atFDCWD, target, moveMountFEmptyPath)
}

// finishRoot adds what the policy asks for to the prepared root and pivots
// into it: the private /tmp of the policy's size; tmpfs over the other
// HideDirs; the workspace read-write with its protected paths read-only;
// the read-only paths. The policy's paths are looked up in the host's
// tree as the helper's namespace got it, absolute symbolic links resolved
// in that tree.
//
// tree, when not -1, is the workspace as the supervisor passed it (see
// Config.WorkspaceTree), attached in place of a lookup; a directory on
// its way the sandbox user cannot search is covered with an empty tmpfs
// holding only the way to the workspace.
//
// budget, when not -1, is the tmpfs of the workspace's write budget (see
// Config.Budget): the workspace is then mounted as an overlay with the
// workspace as its lower layer and its upper and work directories on it.
func finishRoot(c *Config, pr *preparedRoot, tree, budget int) error {
	defer pr.close()
	defer func() {
		if tree >= 0 {
			closeFD(tree)
		}
		if budget >= 0 {
			closeFD(budget)
		}
	}()
	inodes := c.Tmp / 4096
	if inodes < 1024 {
		inodes = 1024
	}
	if err := tmpfs("/tmp", "size="+itoa(c.Tmp)+",nr_inodes="+itoa(inodes)+",mode=1777", 0); err != nil {
		return err
	}
	if err := hideDirs(c.HideDirs); err != nil {
		return err
	}
	bind := func(path string, attr uint64) error {
		rel := path
		for len(rel) > 0 && rel[0] == '/' {
			rel = rel[1:]
		}
		if rel == "" {
			rel = "."
		}
		fd, err := openat2(pr.host, rel, &openHow{flags: oPath | syscall.O_CLOEXEC, resolve: resolveInRoot})
		if err != nil {
			return fail("open "+path+" (the sandbox user must be able to reach it)", err)
		}
		tree, err := cloneTree(fd, "", path, attr)
		closeFD(fd)
		if err != nil {
			return err
		}
		return attachTree(tree, path)
	}
	switch {
	case budget >= 0:
		if tree < 0 {
			// Looked up as the sandbox user, as bind does.
			rel := c.Workspace
			for len(rel) > 0 && rel[0] == '/' {
				rel = rel[1:]
			}
			fd, err := openat2(pr.host, rel, &openHow{flags: oPath | syscall.O_CLOEXEC, resolve: resolveInRoot})
			if err != nil {
				return fail("open "+c.Workspace+" (the sandbox user must be able to reach it)", err)
			}
			tree, err = cloneTree(fd, "", c.Workspace, mountAttrNosuid|mountAttrNodev)
			closeFD(fd)
			if err != nil {
				return err
			}
		} else if err := reachable(newRoot + c.Workspace); err != nil {
			return fail("mount point for "+c.Workspace, err)
		}
		err := overlayWorkspace(c.Workspace, tree, budget)
		tree, budget = -1, -1 // closed by overlayWorkspace
		if err != nil {
			return fail("workspace write budget", err)
		}
	case tree >= 0:
		if err := reachable(newRoot + c.Workspace); err != nil {
			return fail("mount point for "+c.Workspace, err)
		}
		err := attachTree(tree, c.Workspace)
		tree = -1 // closed by attachTree
		if err != nil {
			return err
		}
	case c.Workspace != "":
		if err := bind(c.Workspace, mountAttrNosuid|mountAttrNodev); err != nil {
			return err
		}
	}
	for _, p := range c.ReadOnly {
		if err := bind(p, mountAttrRdonly|mountAttrNosuid|mountAttrNodev); err != nil {
			return err
		}
	}
	if c.Workspace != "" {
		if err := protect(newRoot+c.Workspace, c.Protected); err != nil {
			return err
		}
	}
	// The root's tmpfs holds the mount points made above; nothing may be
	// added to it now (its mounts keep their own attributes).
	if err := mountSetattr(atFDCWD, newRoot, 0, mountAttrRdonly); err != nil {
		return fail("make the root read-only", err)
	}
	if err := chdir(newRoot); err != nil {
		return fail("enter new root", err)
	}
	if err := pivotRoot(".", "."); err != nil {
		return fail("pivot_root", err)
	}
	if err := unmount(".", syscall.MNT_DETACH); err != nil {
		return fail("detach old root", err)
	}
	return nil
}

// cloneTree returns a detached copy of the mount tree at path (relative to
// dirfd; empty: dirfd itself) with the mount attributes attr set on every
// mount of it; name is the path for errors.
func cloneTree(dirfd int, path, name string, attr uint64) (int, error) {
	flags := uintptr(openTreeClone | openTreeCloexec | atRecursive)
	if path == "" {
		flags |= atEmptyPath
	}
	fd, err := openTree(dirfd, path, flags)
	if err != nil {
		return -1, fail("open "+name+" (the sandbox user must be able to reach it)", err)
	}
	if err := mountSetattr(fd, "", atEmptyPath|atRecursive, attr); err != nil {
		closeFD(fd)
		return -1, fail("restrict "+name, err)
	}
	return fd, nil
}

// attachTree mounts the detached tree fd at path in the new root, making
// the mount point on a tmpfs of the sandbox when it is missing, and closes
// fd.
func attachTree(fd int, path string) error {
	defer closeFD(fd)
	target := newRoot + path
	if err := mountPoint(fd, target); err != nil {
		return fail("mount point for "+path, err)
	}
	if err := moveMount(fd, atFDCWD, target, moveMountFEmptyPath); err != nil {
		return fail("bind "+path, err)
	}
	return nil
}

// tmpfs mounts an empty tmpfs over dir in the new root.
func tmpfs(dir, opts string, flags uintptr) error {
	if err := mount("tmpfs", newRoot+dir, "tmpfs", flags|syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fail("mount tmpfs on "+dir, err)
	}
	return nil
}

// hideDirs covers each directory of dirs that exists in the new root with
// an empty, noexec tmpfs.
func hideDirs(dirs []string) error {
	for _, d := range dirs {
		var st syscall.Stat_t
		if stat(newRoot+d, &st, true) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			continue // missing, or a symbolic link into a directory hidden already
		}
		if err := tmpfs(d, "size=64k,mode=0755", syscall.MS_NOEXEC); err != nil {
			return err
		}
	}
	return nil
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// mountPoint makes sure target exists as a directory or a file, like the
// tree fd it will receive. It can only create it on a tmpfs of the sandbox.
func mountPoint(fd int, target string) error {
	var st syscall.Stat_t
	if err := fstat(fd, &st); err != nil {
		return err
	}
	var tst syscall.Stat_t
	if stat(target, &tst, true) == nil {
		return nil
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return mkdirAll(target)
	}
	if err := mkdirAll(dirname(target)); err != nil {
		return err
	}
	f, err := openat(atFDCWD, target, syscall.O_CREAT|syscall.O_WRONLY, mountPointFileMode)
	if err != nil {
		return err
	}
	return closeFD(f)
}

// reachable makes sure the sandbox user can reach target's parent: the
// first directory on the way (below newRoot) it may not search is covered
// with an empty tmpfs, on which mountPoint then makes the rest of the way.
// What that directory held stays out of the sandbox, as it was out of the
// sandbox user's reach.
func reachable(target string) error {
	for i := len(newRoot) + 1; i < len(target); i++ {
		if target[i] != '/' {
			continue
		}
		dir := target[:i]
		var st syscall.Stat_t
		if err := stat(dir, &st, true); err != nil {
			if err == syscall.ENOENT {
				return nil // mountPoint makes it, on a tmpfs of the sandbox
			}
			return err
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return syscall.ENOTDIR
		}
		if err := access(dir, 1 /* X_OK */); err == syscall.EACCES {
			if err := mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
				return err
			}
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

func dirname(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

func mkdirAll(p string) error {
	var st syscall.Stat_t
	if stat(p, &st, false) == nil {
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			return nil
		}
		return syscall.ENOTDIR
	}
	if parent := dirname(p); parent != p && parent != "/" {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := mkdir(p, mountPointDirMode); err != nil && err != syscall.EEXIST {
		return err
	}
	return nil
}

// protect makes the protected paths under ws hold for their structure,
// not only their contents: each directory between ws and a protected path
// (.git for .git/hooks) becomes a mount point of its own, bound onto itself
// with the workspace's attributes, so that it stays writable but can be
// neither renamed, removed nor replaced (the kernel refuses to move a
// mount point: EBUSY); then each existing protected path, and a file met
// where a directory of one was expected (a .git file naming the
// repository, as in worktrees and submodules), is re-bound read-only.
// Parents are bound shallowest first and each path is opened after the
// mounts above it, so every mount lands on the one above. A path reached
// through a symbolic link is refused rather than protected.
func protect(ws string, paths []string) error {
	wsfd, err := openat(atFDCWD, ws, oPath|syscall.O_DIRECTORY, 0)
	if err != nil {
		return fail("open workspace", err)
	}
	defer closeFD(wsfd)
	open := func(p string) (int, error) {
		fd, err := openat2(wsfd, p, &openHow{
			flags:   oPath | syscall.O_CLOEXEC | syscall.O_NOFOLLOW,
			resolve: resolveBeneath | resolveNoSymlinks | resolveNoMagiclinks,
		})
		switch {
		case err == syscall.ENOENT, err == syscall.ENOTDIR:
			return -1, nil
		case err == syscall.ELOOP:
			return -1, fail("protect "+p, textError("the protected path is, or passes through, a symbolic link"))
		case err != nil:
			return -1, fail("protect "+p, err)
		}
		var st syscall.Stat_t
		if err := fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			closeFD(fd)
			return -1, fail("protect "+p, textError("the protected path is a symbolic link"))
		}
		return fd, nil
	}
	// Every directory above a protected path, and the paths to re-bind
	// read-only: the protected ones and a file met as their parent.
	var parents, leaves []string
	for _, p := range paths {
		leaf := p
		for i := 0; i < len(p); i++ {
			if p[i] != '/' {
				continue
			}
			fd, err := open(p[:i])
			if err != nil {
				return err
			}
			if fd < 0 {
				leaf = ""
				break
			}
			var st syscall.Stat_t
			err = fstat(fd, &st)
			closeFD(fd)
			if err != nil {
				return fail("protect "+p[:i], err)
			}
			if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				leaf = p[:i]
				break
			}
			parents = addPath(parents, p[:i])
		}
		if leaf != "" {
			leaves = addPath(leaves, leaf)
		}
	}
	// Shallowest first: a parent's mount must be in place before the
	// mounts below it are opened.
	sortByDepth(parents)
	for _, p := range parents {
		if err := rebind(open, p, 0); err != nil {
			return err
		}
	}
	for _, p := range leaves {
		if err := rebind(open, p, mountAttrRdonly|mountAttrNosuid|mountAttrNodev); err != nil {
			return err
		}
	}
	return nil
}

// rebind mounts a copy of the tree at p (opened with open) onto p itself,
// with the mount attributes attr added to those it has.
func rebind(open func(string) (int, error), p string, attr uint64) error {
	fd, err := open(p)
	if err != nil || fd < 0 {
		return err
	}
	defer closeFD(fd)
	tree, err := openTree(fd, "", openTreeClone|openTreeCloexec|atRecursive|atEmptyPath)
	if err != nil {
		return fail("protect "+p, err)
	}
	defer closeFD(tree)
	if attr != 0 {
		if err := mountSetattr(tree, "", atEmptyPath|atRecursive, attr); err != nil {
			return fail("protect "+p, err)
		}
	}
	if err := moveMount(tree, fd, "", moveMountFEmptyPath|moveMountTEmptyPath); err != nil {
		return fail("protect "+p, err)
	}
	return nil
}

func addPath(list []string, p string) []string {
	for _, q := range list {
		if q == p {
			return list
		}
	}
	return append(list, p)
}

func depth(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			n++
		}
	}
	return n
}

// sortByDepth sorts paths by their number of elements, keeping the order
// of paths as deep (an insertion sort: the lists are short).
func sortByDepth(paths []string) {
	for i := 1; i < len(paths); i++ {
		for j := i; j > 0 && depth(paths[j]) < depth(paths[j-1]); j-- {
			paths[j], paths[j-1] = paths[j-1], paths[j]
		}
	}
}

// Where overlayWorkspace attaches the layers of the workspace's overlay:
// on the staging tmpfs, detached with the old root by finishRoot's pivot
// (the overlay keeps private copies of its layers' mounts).
const (
	lowerDir  = "/tmp/.sandbox-lower"
	budgetDir = "/tmp/.sandbox-budget"
)

// fsconfig commands (linux/mount.h).
const fsconfigSetString = 1

// budgetTmpfs makes the tmpfs of a workspace write budget of size bytes
// (one inode per 4 KiB, at least 1024), nosuid and nodev, as a detached
// mount: the supervisor gets a copy of it, and overlayWorkspace attaches
// it. Its root is 0700: only the helper (and the supervisor, its
// owner or root) may enter it.
func budgetTmpfs(size uint64) (int, error) {
	name, _ := ptr("tmpfs")
	fsfd, err := sys(sysFsopen, p(name), fsopenCloexec)
	if err != nil {
		return -1, fail("fsopen tmpfs", err)
	}
	defer closeFD(int(fsfd))
	inodes := size / 4096
	if inodes < 1024 {
		inodes = 1024
	}
	for _, kv := range [][2]string{{"size", itoa(size)}, {"nr_inodes", itoa(inodes)}, {"mode", "0700"}} {
		k, _ := ptr(kv[0])
		v, _ := ptr(kv[1])
		if _, err := sys(sysFsconfig, fsfd, fsconfigSetString, p(k), p(v), 0); err != nil {
			return -1, fail("tmpfs option "+kv[0], err)
		}
	}
	if _, err := sys(sysFsconfig, fsfd, fsconfigCmdCreate, 0, 0, 0); err != nil {
		return -1, fail("create tmpfs", err)
	}
	mnt, err := sys(sysFsmount, fsfd, fsmountCloexec, mountAttrNosuid|mountAttrNodev)
	if err != nil {
		return -1, fail("fsmount tmpfs", err)
	}
	return int(mnt), nil
}

// overlayWorkspace mounts the workspace ws in the new root as an overlay:
// lower the workspace's detached tree, upper and work directories on the
// budget's tmpfs. The upper directory gets the mode of the workspace's
// root, so that the run sees its workspace as it is. It closes tree and
// budget. The overlay's options: userxattr (its metadata in user.overlay.*
// xattrs, which a user namespace may write; without it removing a
// copied-up directory fails), no redirects, metacopy or index, so that a
// change is always a whole file, a whiteout or an opaque directory in the
// upper layer, which is all the supervisor's apply step reads.
func overlayWorkspace(ws string, tree, budget int) error {
	attach := func(fd int, dir string) error {
		defer closeFD(fd)
		if err := mkdir(dir, stagingDirectoryMode); err != nil {
			return fail("staging directory", err)
		}
		if err := moveMount(fd, atFDCWD, dir, moveMountFEmptyPath); err != nil {
			return fail("attach "+dir, err)
		}
		return nil
	}
	if err := attach(tree, lowerDir); err != nil {
		closeFD(budget)
		return err
	}
	if err := attach(budget, budgetDir); err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := stat(lowerDir, &st, false); err != nil {
		return fail("stat the workspace", err)
	}
	for _, d := range []string{"upper", "work"} {
		if err := mkdir(budgetDir+"/"+d, 0o700); err != nil {
			return fail("make the "+d+" directory", err)
		}
	}
	if err := chmod(budgetDir+"/upper", st.Mode&0o7777); err != nil {
		return fail("mode of the upper directory", err)
	}
	target := newRoot + ws
	var tst syscall.Stat_t
	if stat(target, &tst, true) != nil {
		if err := mkdirAll(target); err != nil {
			return fail("mount point for "+ws, err)
		}
	}
	opts := "lowerdir=" + lowerDir + ",upperdir=" + budgetDir + "/upper,workdir=" + budgetDir + "/work,userxattr,redirect_dir=nofollow,metacopy=off,index=off"
	if err := mount("overlay", target, "overlay", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fail("mount the overlay", err)
	}
	return nil
}
