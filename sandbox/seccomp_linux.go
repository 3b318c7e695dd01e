package sandbox

import (
	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in the sandbox: debugging other processes,
// kernel interfaces with a history of escapes (bpf, io_uring, userfaultfd,
// perf), keyrings, mounts, namespaces and machine administration.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
	"keyctl", "add_key", "request_key",
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig", "fspick",
	"open_tree", "move_mount", "mount_setattr",
	"unshare", "setns",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"acct", "swapon", "swapoff", "reboot", "syslog", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
	"name_to_handle_at", "open_by_handle_at", "lookup_dcookie", "vhangup", "personality",
}

// applySeccomp loads the sandbox's filter on this thread. Everything not
// listed is allowed; the filter narrows the kernel surface, while the
// namespaces, Landlock and capabilities do the confining.
func applySeccomp(c *helperConfig) error {
	socket := seccomp.NameWithConditions{Name: "socket"}
	if !c.DenyUnix {
		socket.Conditions = append(socket.Conditions, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX})
	}
	if c.Network == NetworkHost {
		socket.Conditions = append(socket.Conditions,
			seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
			seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6})
	}
	deny := seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: deniedSyscalls}
	var conditional seccomp.SyscallGroup
	conditional.Action = seccomp.ActionErrno
	conditional.NamesWithCondtions = []seccomp.NameWithConditions{
		// A nested user namespace would give back the capabilities dropped.
		{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_NEWUSER}}},
	}
	if len(socket.Conditions) == 0 {
		deny.Names = append(deny.Names, "socket", "socketpair")
	} else {
		conditional.NamesWithCondtions = append(conditional.NamesWithCondtions, socket)
	}
	// clone3 passes its flags in memory a filter cannot read: make it look
	// absent, so that C libraries fall back to clone, which is filtered.
	clone3 := seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}}
	filter := seccomp.Filter{
		NoNewPrivs: true,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{deny, conditional, clone3},
		},
	}
	return seccomp.LoadFilter(filter)
}
