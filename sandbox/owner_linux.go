package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// workspaceTree opens the workspace ws as a detached copy of its mount
// tree (open_tree), nosuid and nodev, for the helper to attach (only root
// may, and only root calls it). When the workspace's owner is not the
// sandbox user uid, the copy is an idmapped mount mapping the owner's uid
// and gid onto uid: the sandboxed command's files belong to the owner on
// disk, and the owner's files are the command's to write as their modes
// allow; every other id stays unmapped (the command is "other" to it).
// A file system that cannot be idmapped gets the plain copy, as before:
// the command is then the sandbox user to every file.
func workspaceTree(ws string, uid int) (int, error) {
	var st unix.Stat_t
	if err := unix.Stat(ws, &st); err != nil {
		return -1, fmt.Errorf("sandbox: setting up the sandbox failed: open the workspace %s: %w", ws, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return -1, fmt.Errorf("sandbox: setting up the sandbox failed: the workspace %s is not a directory", ws)
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, ws, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, fmt.Errorf("sandbox: setting up the sandbox failed: open the workspace %s: %w", ws, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if int(st.Uid) != uid || int(st.Gid) != uid {
		if ns, err := idmapNamespace(int(st.Uid), int(st.Gid), uid); err == nil {
			idmapped := attr
			idmapped.Attr_set |= unix.MOUNT_ATTR_IDMAP
			idmapped.Userns_fd = uint64(ns)
			if unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &idmapped) == nil {
				return fd, nil
			}
		}
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("sandbox: setting up the sandbox failed: restrict the workspace %s: %w", ws, err)
	}
	return fd, nil
}

type idmapKey struct{ uid, gid, to int }

var idmaps struct {
	sync.Mutex
	ns map[idmapKey]int
}

// idmapNamespace returns a descriptor of a user namespace mapping uid and
// gid (ids on disk) onto the host id to, made once for each mapping and
// kept for the process's life: a child in a new user namespace with those
// maps, which waits until its namespace is open.
func idmapNamespace(uid, gid, to int) (int, error) {
	k := idmapKey{uid, gid, to}
	idmaps.Lock()
	defer idmaps.Unlock()
	if fd, ok := idmaps.ns[k]; ok {
		return fd, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer w.Close()
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"clawtool-sandbox-idmap"}
	cmd.Env = []string{helperEnv + "=hold", "GOMAXPROCS=1", "GOGC=off"}
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: to, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: to, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	release, err := spawn(cmd.Start) // it dies with the thread that started it
	r.Close()
	if err != nil {
		return -1, fmt.Errorf("idmap namespace: %w", err)
	}
	defer release() // after the Wait below
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	w.Close()
	cmd.Wait()
	if err != nil {
		return -1, fmt.Errorf("idmap namespace: %w", err)
	}
	if idmaps.ns == nil {
		idmaps.ns = map[idmapKey]int{}
	}
	idmaps.ns[k] = fd
	return fd, nil
}
