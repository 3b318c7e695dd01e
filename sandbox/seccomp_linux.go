package sandbox

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
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
	"open_tree", "open_tree_attr", "move_mount", "mount_setattr",
	"unshare", "setns",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"acct", "swapon", "swapoff", "reboot", "syslog", "quotactl", "quotactl_fd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
	"name_to_handle_at", "open_by_handle_at", "lookup_dcookie", "vhangup", "personality",
	// Legacy interfaces with a history of kernel bugs, which the
	// container engines' default profiles deny too (x86 only; left out
	// where the architecture lacks them, see archNames).
	"modify_ldt", "uselib", "vm86", "vm86old",
}

// archNames keeps the names the running architecture has: a filter naming
// a call the architecture lacks would not assemble.
func archNames(names []string) []string {
	info, err := arch.GetInfo("")
	if err != nil {
		return names // Assemble reports the architecture
	}
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		_, ok := info.SyscallNames[n]
		return !ok
	})
}

// seccompPolicy is the sandbox's filter. Everything not listed is allowed;
// the filter narrows the kernel surface, while the namespaces, Landlock and
// capabilities do the confining.
func seccompPolicy(denyUnix bool, network Network) seccomp.Policy {
	socket := seccomp.NameWithConditions{Name: "socket"}
	if !denyUnix {
		socket.Conditions = append(socket.Conditions, seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX})
	}
	if network != NetworkNone {
		// NetworkAllow: the namespace's loopback, where the proxy listens.
		socket.Conditions = append(socket.Conditions,
			seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET},
			seccomp.Condition{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_INET6})
	}
	deny := seccomp.SyscallGroup{Action: seccomp.ActionErrno, Names: archNames(deniedSyscalls)}
	var conditional seccomp.SyscallGroup
	conditional.Action = seccomp.ActionErrno
	conditional.NamesWithCondtions = []seccomp.NameWithConditions{
		// A nested user namespace would give back the capabilities dropped.
		{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: unix.CLONE_NEWUSER}}},
	}
	conditional.NamesWithCondtions = append(conditional.NamesWithCondtions, setIDModes()...)
	conditional.NamesWithCondtions = append(conditional.NamesWithCondtions, coreLimitCalls()...)
	if network != NetworkNone {
		conditional.NamesWithCondtions = append(conditional.NamesWithCondtions, ipProtocols()...)
	}
	if len(socket.Conditions) == 0 {
		deny.Names = append(deny.Names, "socket", "socketpair")
	} else {
		// socketpair reaches the kernel's lookup of its family as socket
		// does (which loads the family's module on demand): only unix
		// sockets come in pairs here.
		conditional.NamesWithCondtions = append(conditional.NamesWithCondtions, socket,
			seccomp.NameWithConditions{Name: "socketpair", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}})
	}
	// clone3 passes its flags in memory a filter cannot read: make it look
	// absent, so that C libraries fall back to clone, which is filtered.
	// openat2 too passes its mode in memory (struct open_how): absent,
	// C libraries and Go fall back to openat, which is filtered.
	clone3 := seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3", "openat2"}}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls:      []seccomp.SyscallGroup{deny, conditional, clone3},
	}
}

type seccompKey struct {
	denyUnix bool
	network  Network
}

// seccompPrograms caches the assembled filters: there are four.
var seccompPrograms sync.Map // seccompKey -> []byte

// seccompProgram returns the filter for a run, assembled here so that the
// helper only loads it: an array of struct sock_filter in the machine's
// byte order.
func seccompProgram(denyUnix bool, network Network) ([]byte, error) {
	key := seccompKey{denyUnix, network}
	if b, ok := seccompPrograms.Load(key); ok {
		return b.([]byte), nil
	}
	p := seccompPolicy(denyUnix, network)
	insts, err := p.Assemble()
	if err != nil {
		return nil, err
	}
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	fence, err := seccompFence(info)
	if err != nil {
		return nil, err
	}
	insts = append(fence, insts...)
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		b = binary.NativeEndian.AppendUint16(b, in.Op)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	seccompPrograms.Store(key, b)
	return b, nil
}

// setIDBits are the mode bits a run may not give a file: through the
// idmapped workspace (see workspaceTree) a file the run makes belongs to
// the workspace's owner, root as often as not, and a setuid-root file
// planted there would give root to whoever runs it on the host later.
const setIDBits = unix.S_ISUID | unix.S_ISGID

// setIDModes are the conditions that deny (EPERM) every call giving a file
// setIDBits: chmod and its variants, and creating a file (open with
// O_CREAT or O_TMPFILE, creat, mknod) with such a mode. Names this
// architecture lacks (open, creat, chmod on arm64) are left out.
func setIDModes() []seccomp.NameWithConditions {
	create := uint64(unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY)
	mode := func(arg uint32) seccomp.Condition {
		return seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: setIDBits}
	}
	flags := func(arg uint32) seccomp.Condition {
		return seccomp.Condition{Argument: arg, Operation: seccomp.BitsSet, Value: create}
	}
	all := []seccomp.NameWithConditions{
		{Name: "chmod", Conditions: seccomp.ArgumentConditions{mode(1)}},
		{Name: "fchmod", Conditions: seccomp.ArgumentConditions{mode(1)}},
		{Name: "fchmodat", Conditions: seccomp.ArgumentConditions{mode(2)}},
		{Name: "fchmodat2", Conditions: seccomp.ArgumentConditions{mode(2)}},
		{Name: "creat", Conditions: seccomp.ArgumentConditions{mode(1)}},
		{Name: "open", Conditions: seccomp.ArgumentConditions{flags(1), mode(2)}},
		{Name: "openat", Conditions: seccomp.ArgumentConditions{flags(2), mode(3)}},
		{Name: "mknod", Conditions: seccomp.ArgumentConditions{mode(1)}},
		{Name: "mknodat", Conditions: seccomp.ArgumentConditions{mode(2)}},
	}
	return onThisArch(all)
}

// onThisArch returns the calls of all that this architecture has: names
// it lacks are left out. All of them when the architecture cannot be
// read (Assemble reports it).
func onThisArch(all []seccomp.NameWithConditions) []seccomp.NameWithConditions {
	info, err := arch.GetInfo("")
	if err != nil {
		return all
	}
	out := all[:0]
	for _, nc := range all {
		if _, ok := info.SyscallNames[nc.Name]; ok {
			out = append(out, nc)
		}
	}
	return out
}

// ipProtocols are the conditions that deny (EPERM) an IP socket the
// network modes do not model, where IP sockets are allowed (host, allow):
// a type other than a stream or a datagram (with SOCK_NONBLOCK and
// SOCK_CLOEXEC; SOCK_RAW, both bits, needs CAP_NET_RAW, which the run
// lacks), or a protocol other than 0, TCP, UDP, UDP-Lite, ICMP, ICMPv6
// and MPTCP. The kernel looks the others up by loading their modules on
// demand (DCCP, SCTP, L2TP: net-pf-2-proto-33-type-6 …) at an
// unprivileged request.
func ipProtocols() []seccomp.NameWithConditions {
	types := uint64(0xffffffff) &^ uint64(unix.SOCK_STREAM|unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	var out []seccomp.NameWithConditions
	for _, family := range []uint64{unix.AF_INET, unix.AF_INET6} {
		out = append(out, seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{
			{Argument: 0, Operation: seccomp.Equal, Value: family},
			{Argument: 1, Operation: seccomp.BitsSet, Value: types},
		}})
		protocols := seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: family}}
		for _, p := range []uint64{0, unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_UDPLITE, unix.IPPROTO_ICMP, unix.IPPROTO_ICMPV6, unix.IPPROTO_MPTCP} {
			protocols = append(protocols, seccomp.Condition{Argument: 2, Operation: seccomp.NotEqual, Value: p})
		}
		out = append(out, seccomp.NameWithConditions{Name: "socket", Conditions: protocols})
	}
	return out
}

// coreLimitCalls are the conditions that deny (EPERM) setting
// RLIMIT_CORE: setrlimit of it, and prlimit64 of it with a new value
// (reading it stays allowed). The helper sets it to 1, the only value
// that keeps a crash from a pipe core handler (see applyRlimits in the
// helper); a run lowering it to 0 would hand its next crash to the host's
// handler again. Names this architecture lacks are left out.
func coreLimitCalls() []seccomp.NameWithConditions {
	all := []seccomp.NameWithConditions{
		{Name: "setrlimit", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.RLIMIT_CORE}}},
		{Name: "prlimit64", Conditions: seccomp.ArgumentConditions{
			{Argument: 1, Operation: seccomp.Equal, Value: unix.RLIMIT_CORE},
			{Argument: 2, Operation: seccomp.NotEqual, Value: 0},
		}},
	}
	return onThisArch(all)
}

// seccompTableMax returns the highest system call number the filter's
// table knows on this architecture (-1 when it knows none).
func seccompTableMax() int {
	info, err := arch.GetInfo("")
	if err != nil {
		return -1
	}
	return tableMax(info)
}

func tableMax(info *arch.Info) int {
	m := -1
	for nr := range info.SyscallNumbers {
		m = max(m, nr)
	}
	return m
}

// seccompFence is the filter's prologue, placed in front of the program
// the library assembles. The library's program allows what it does not
// list (its DefaultAction), and it lists by name from a table of one
// architecture: a call of another ABI (i386 through int $0x80 on amd64,
// aarch32 on arm64: their numbers mean other calls, and the library's
// program allowed every one of them, ptrace and bpf included) and a call
// the table does not know (file_getattr, listns, any later one, or one
// in a range the table skips) would pass. The fence refuses both:
// another architecture with ENOSYS for every call, and every number the
// table does not name (the x32 ABI's included, which set bit 30) with
// ENOSYS, so that C libraries take their fallbacks. Its jumps are
// forward and its last falls through to the library's first
// instruction, which loads what it needs again, so the library's jump
// offsets are untouched.
func seccompFence(info *arch.Info) ([]bpf.Instruction, error) {
	top := tableMax(info)
	if top < 0 {
		return nil, fmt.Errorf("seccomp: no system call table for %s", info.Name)
	}
	enosys := bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)}
	insts := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		enosys,
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	for _, g := range tableGaps(info, top) {
		insts = append(insts,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(g[0]), SkipFalse: 2},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: uint32(g[1]), SkipTrue: 1},
			enosys)
	}
	return append(insts,
		bpf.JumpIf{Cond: bpf.JumpLessOrEqual, Val: uint32(top), SkipTrue: 1},
		enosys), nil
}

// tableGaps returns the ranges of numbers below top that the table does
// not name, each [first, last].
func tableGaps(info *arch.Info, top int) [][2]int {
	var gaps [][2]int
	for nr := 0; nr <= top; nr++ {
		if _, ok := info.SyscallNumbers[nr]; ok {
			continue
		}
		if n := len(gaps); n > 0 && gaps[n-1][1] == nr-1 {
			gaps[n-1][1] = nr
		} else {
			gaps = append(gaps, [2]int{nr, nr})
		}
	}
	return gaps
}
