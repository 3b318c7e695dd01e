package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperEnv marks the re-executed binary as the sandbox helper. It is the
// helper's whole environment; the command gets the policy's environment.
const helperEnv = "CLAWTOOL_SANDBOX_HELPER"

// mainCalled records that the program called Main, without which the
// re-executed binary would run the program again instead of the helper.
var mainCalled atomic.Bool

// Descriptors the supervisor hands the helper.
const (
	configFD = 3 // read end of a pipe carrying the helperConfig as JSON
	errorFD  = 4 // write end of a pipe for a setup error; closed by exec
)

// maxConfig bounds the helper's configuration.
const maxConfig = 1 << 20

// helperConfig is what the supervisor tells the helper to build.
type helperConfig struct {
	Argv       []string
	Env        []string
	Workspace  string
	ReadOnly   []string
	Protected  []string
	HideDirs   []string
	Network    Network
	DenyUnix   bool
	Limits     Limits
	Layers     []Layer
	LandlockV6 bool
}

func (c *helperConfig) has(l Layer) bool {
	for _, x := range c.Layers {
		if x == l {
			return true
		}
	}
	return false
}

// Main runs the sandbox helper when the process was started as one, and
// returns at once otherwise. Call it at the top of main (or TestMain),
// before anything else; in the helper it never returns.
func Main() {
	probeMain()
	if os.Getenv(helperEnv) != "1" {
		mainCalled.Store(true)
		return
	}
	// Credentials, Landlock, seccomp and no_new_privs are per thread: build
	// everything on this one and execute the command from it.
	runtime.LockOSThread()
	errw := os.NewFile(errorFD, "sandbox-error")
	err := helper()
	fmt.Fprint(errw, err.Error())
	os.Exit(125)
}

// stageError names the step of the helper that failed.
func stageError(stage string, err error) error {
	return fmt.Errorf("%s: %w", stage, err)
}

func helper() error {
	f := os.NewFile(configFD, "sandbox-config")
	raw, err := io.ReadAll(io.LimitReader(f, maxConfig))
	f.Close()
	if err != nil {
		return stageError("read configuration", err)
	}
	var c helperConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return stageError("decode configuration", err)
	}
	if len(c.Argv) == 0 {
		return errors.New("no command")
	}
	if c.has(LayerMountNS) {
		if err := buildRoot(&c); err != nil {
			return err
		}
	}
	if c.has(LayerUTSNS) {
		// The host's name stays the host's.
		if err := unix.Sethostname([]byte("sandbox")); err != nil {
			return stageError("set host name", err)
		}
	}
	dir := "/tmp"
	if c.Workspace != "" {
		dir = c.Workspace
	}
	if err := unix.Chdir(dir); err != nil {
		return stageError("enter "+dir, err)
	}
	if c.has(LayerUserNS) {
		if err := dropCapabilities(); err != nil {
			return stageError("drop capabilities", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return stageError("no_new_privs", err)
	}
	if c.has(LayerLandlock) {
		if err := applyLandlock(&c); err != nil {
			return stageError("landlock", err)
		}
	}
	if c.has(LayerSeccomp) {
		if err := applySeccomp(&c); err != nil {
			return stageError("seccomp", err)
		}
	}
	if c.has(LayerRlimits) {
		if err := applyRlimits(c.Limits); err != nil {
			return stageError("rlimits", err)
		}
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return stageError("close descriptors", err)
	}
	path, err := lookPath(c.Argv[0], c.Env)
	if err != nil {
		return err
	}
	err = syscall.Exec(path, c.Argv, c.Env)
	return fmt.Errorf("exec %s: %w", c.Argv[0], err)
}

// lookPath finds file in the PATH of env, as the shell would.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathList := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathList = v
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %s: %w", file, errNotFound)
}

var errNotFound = errors.New("executable file not found in the sandbox's PATH")

// newRoot is where the helper assembles the root before pivot_root; it lives
// on a tmpfs mounted over /tmp in the helper's private mount namespace.
const newRoot = "/tmp/.sandbox-root"

// buildRoot assembles the sandbox's file system and pivots into it: a
// read-only, nosuid, nodev copy of the host root; a private /tmp; tmpfs over
// daemon-socket directories; a minimal /dev; a fresh /proc; the workspace
// read-write with its protected paths read-only; the read-only paths.
func buildRoot(c *helperConfig) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return stageError("make mounts private", err)
	}
	// Clone the trees to bind before /tmp is covered: they may live there.
	type tree struct {
		fd       int
		path     string
		readOnly bool
	}
	var trees []tree
	clone := func(path string, readOnly bool, devices ...bool) error {
		fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return stageError("open "+path+" (the sandbox user must be able to reach it)", err)
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID}
		if len(devices) == 0 {
			attr.Attr_set |= unix.MOUNT_ATTR_NODEV
		}
		if readOnly {
			attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr); err != nil {
			return stageError("restrict "+path, err)
		}
		trees = append(trees, tree{fd, path, readOnly})
		return nil
	}
	if c.Workspace != "" {
		if err := clone(c.Workspace, false); err != nil {
			return err
		}
	}
	for _, p := range c.ReadOnly {
		if err := clone(p, true); err != nil {
			return err
		}
	}
	devices := []string{"null", "zero", "full", "random", "urandom"}
	for _, d := range devices {
		if err := clone("/dev/"+d, false, true); err != nil {
			return err
		}
	}

	if err := unix.Mount("sandbox", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64k,mode=0700"); err != nil {
		return stageError("mount staging tmpfs", err)
	}
	if err := os.Mkdir(newRoot, 0o700); err != nil {
		return stageError("staging directory", err)
	}
	if err := unix.Mount("/", newRoot, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return stageError("bind root", err)
	}
	ro := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(unix.AT_FDCWD, newRoot, unix.AT_RECURSIVE, ro); err != nil {
		return stageError("make root read-only", err)
	}
	tmpfs := func(dir, opts string, flags uintptr) error {
		if err := unix.Mount("tmpfs", newRoot+dir, "tmpfs", flags|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return stageError("mount tmpfs on "+dir, err)
		}
		return nil
	}
	if err := tmpfs("/tmp", fmt.Sprintf("size=%d,nr_inodes=%d,mode=1777", c.Limits.Tmp, max(c.Limits.Tmp/4096, 1024)), 0); err != nil {
		return err
	}
	for _, d := range c.HideDirs {
		st, err := os.Lstat(newRoot + d)
		if err != nil || !st.IsDir() {
			continue // missing, or a symbolic link into a directory hidden already
		}
		if err := tmpfs(d, "size=64k,mode=0755", unix.MS_NOEXEC); err != nil {
			return err
		}
	}
	if err := tmpfs("/dev", "size=64k,mode=0755", unix.MS_NOEXEC); err != nil {
		return err
	}
	for _, link := range [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}} {
		if err := os.Symlink(link[0], newRoot+"/dev/"+link[1]); err != nil {
			return stageError("/dev/"+link[1], err)
		}
	}
	if err := unix.Mount("proc", newRoot+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return stageError("mount /proc", err)
	}
	for _, t := range trees {
		target := newRoot + t.path
		if err := mountPoint(t.fd, target); err != nil {
			return stageError("mount point for "+t.path, err)
		}
		if err := unix.MoveMount(t.fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return stageError("bind "+t.path, err)
		}
		unix.Close(t.fd)
	}
	if c.Workspace != "" {
		if err := protect(newRoot+c.Workspace, c.Protected); err != nil {
			return err
		}
	}
	if err := unix.Chdir(newRoot); err != nil {
		return stageError("enter new root", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return stageError("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return stageError("detach old root", err)
	}
	return nil
}

// mountPoint makes sure target exists as a directory or a file, like the
// tree fd it will receive. It can only create it on a tmpfs of the sandbox.
func mountPoint(fd int, target string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// protect re-binds each existing protected path under ws read-only. A path
// reached through a symbolic link is refused rather than protected.
func protect(ws string, paths []string) error {
	wsfd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return stageError("open workspace", err)
	}
	defer unix.Close(wsfd)
	for _, p := range paths {
		fd, err := unix.Openat2(wsfd, p, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			continue
		case errors.Is(err, unix.ELOOP):
			return stageError("protect "+p, errors.New("the protected path is, or passes through, a symbolic link"))
		case err != nil:
			return stageError("protect "+p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return stageError("protect "+p, errors.New("the protected path is a symbolic link"))
		}
		tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		if err != nil {
			unix.Close(fd)
			return stageError("protect "+p, err)
		}
		attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		err = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr)
		if err == nil {
			err = unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
		}
		unix.Close(tree)
		unix.Close(fd)
		if err != nil {
			return stageError("protect "+p, err)
		}
	}
	return nil
}

// Securebits (linux/securebits.h).
const (
	secbitNoroot                 = 1 << 0
	secbitNorootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
)

// dropCapabilities empties every capability set of this thread for good:
// root in the namespace gains nothing by exec, setuid or ambient raise.
func dropCapabilities() error {
	bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

func applyRlimits(l Limits) error {
	set := func(res int, v uint64) error {
		return unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v})
	}
	cpu := uint64((l.CPU + 999_999_999) / 1_000_000_000)
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"cpu", unix.RLIMIT_CPU, cpu},
		{"fsize", unix.RLIMIT_FSIZE, uint64(l.FileSize)},
		{"nofile", unix.RLIMIT_NOFILE, uint64(l.OpenFiles)},
		{"core", unix.RLIMIT_CORE, 0},
		{"nproc", unix.RLIMIT_NPROC, uint64(l.Processes)},
		{"data", unix.RLIMIT_DATA, uint64(l.Memory)},
	} {
		if err := set(r.res, r.v); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return nil
}
