//go:build linux && !amd64

package helper

import "syscall"

// startHelper clones the helper of request r into its namespaces, the
// supervisor's child (CLONE_PARENT), in a session of its own, with the
// parent death signal SIGKILL, root in its user namespace mapped onto
// r.UID and r.GID, the descriptors files at their numbers (^0 closes
// one) and the environment env, and execs this program as the helper in
// it. It returns once the exec succeeded or failed. Here it is
// syscall.ForkExec, whose clone copies the forker's page tables (see
// spawn_linux_amd64.go for the clone that does not).
func startHelper(r ForkRequest, files []uintptr, env []string) (int, error) {
	attr := &syscall.SysProcAttr{
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
		// The helper is the supervisor's child, not the forker's.
		Cloneflags:  uintptr(r.Flags) | syscall.CLONE_PARENT,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.UID), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(r.GID), Size: 1}},
		Credential:  &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}},
	}
	if r.Bits&ForkSetgroups != 0 {
		attr.GidMappingsEnableSetgroups = true
	} else {
		attr.Credential.NoSetGroups = true
	}
	return syscall.ForkExec("/proc/self/exe", []string{"clawtool-sandbox"}, &syscall.ProcAttr{Env: env, Files: files, Sys: attr})
}
