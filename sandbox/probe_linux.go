package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/miniopenclaw/tool/sandbox/internal/helper"
)

// Probe reports which layers this host offers. It starts one helper in
// fresh namespaces to check that they can be created, so it costs a few
// milliseconds; the result is computed once per process.
func Probe() Report {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

var (
	probeOnce sync.Once
	probed    Report
)

func probe() Report {
	var r Report
	add := func(l Layer, ok bool, detail string) {
		r.Layers = append(r.Layers, LayerStatus{Layer: l, Available: ok, Detail: detail})
	}
	fork, nsErr := probeNamespaces()
	nsDetail := "user, mount, PID, network, IPC and UTS namespaces can be created"
	if nsErr != nil {
		nsDetail = nsErr.Error()
	} else if fork {
		nsDetail += "; procfs takes a PID namespace: commands start from a single-threaded fork"
	}
	r.fork = fork
	for _, l := range []Layer{LayerUserNS, LayerMountNS, LayerPIDNS, LayerNetNS, LayerIPCNS, LayerUTSNS} {
		add(l, nsErr == nil, nsDetail)
	}
	add(LayerNoNewPrivs, true, "prctl(PR_SET_NO_NEW_PRIVS)")
	abi := landlockABI()
	add(LayerLandlock, abi >= minLandlockABI, fmt.Sprintf("kernel Landlock ABI %d, sandbox needs %d", abi, minLandlockABI))
	if seccomp.Supported() {
		add(LayerSeccomp, true, "seccomp filters")
	} else {
		add(LayerSeccomp, false, "the kernel does not offer seccomp filters")
	}
	add(LayerRlimits, true, "RLIMIT_CPU, FSIZE, NOFILE, CORE, NPROC and DATA")
	cg := hostCgroups()
	add(LayerCgroup, cg.version != 0, cg.detail)
	return r
}

// probeNamespaces starts the helper in every namespace the sandbox uses,
// in probe mode; fork reports whether it could also make the /proc of a
// child PID namespace, which a spare needs to start its command in fork
// mode (see helper.ForkEnv).
func probeNamespaces() (fork bool, err error) {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"clawtool-sandbox-probe"}
	cmd.Env = []string{helperEnv + "=probe"}
	cmd.SysProcAttr = sysProcAttr(namespaceFlags(NetworkNone), sandboxUID(0))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	release, err := spawn(cmd.Start) // it dies with the thread that started it
	if err == nil {
		err = cmd.Wait()
		release()
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == helper.ExitProbeNoFork {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot create the sandbox namespaces: %v %s", err, strings.TrimSpace(out.String()))
	}
	return true, nil
}

func namespaceFlags(n Network) uintptr {
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS)
	if n != NetworkHost {
		flags |= syscall.CLONE_NEWNET
	}
	return flags
}

// sandboxUID is the host id the sandbox root maps to.
func sandboxUID(policyUID int) int {
	if os.Geteuid() != 0 {
		return os.Geteuid()
	}
	if policyUID > 0 {
		return policyUID
	}
	return DefaultUID
}

// sandboxIDs returns the host user and group ids the sandbox's root maps
// to, for the sandbox user uid: uid twice as root, otherwise uid and this
// program's effective group.
func sandboxIDs(uid int) (int, int) {
	if os.Geteuid() != 0 {
		return uid, os.Getegid()
	}
	return uid, uid
}

func sysProcAttr(cloneflags uintptr, uid int) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
	}
	if cloneflags&syscall.CLONE_NEWUSER == 0 {
		if os.Geteuid() == 0 {
			attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
		}
		return attr
	}
	attr.Cloneflags = cloneflags
	uid, gid := sandboxIDs(uid)
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
	attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	if os.Geteuid() == 0 {
		// Drop root's supplementary groups, which would otherwise reach the
		// sandbox (setgroups needs "allow", which only a privileged parent
		// may write).
		attr.GidMappingsEnableSetgroups = true
	} else {
		attr.Credential.NoSetGroups = true
	}
	return attr
}
