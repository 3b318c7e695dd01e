// Package helper is the sandbox's helper process: the re-executed binary
// that builds the sandbox and starts the command in it.
//
// The helper runs from this package's init function, so that a program
// linking package sandbox serves as its own helper without calling
// anything. The package imports nothing but syscall and unsafe: Go
// initialises a package as soon as its imports are initialised (in import
// path order among those that are ready), so the helper starts before the
// initialisation of the heavy packages of the program (HTTP, TLS, container
// clients, telemetry ...), which it then never reaches.
//
// The supervisor, in package sandbox, describes the sandbox in a [Config]
// it sends to the helper over a pipe, already reduced to what the helper
// has to do: paths to bind, rights to grant, a seccomp program assembled
// beforehand, limits as numbers.
package helper

// Env marks the re-executed binary as the helper: "1" builds the sandbox
// described on ConfigFD and starts the command in it, writing the byte
// Ready to ErrorFD when it waits for its configuration and Ack once it has
// read the whole of it; "probe" exits 0 at once, or ExitProbeNoFork when
// fork mode (see ForkEnv) cannot work on this kernel.
const Env = "CLAWTOOL_SANDBOX_HELPER"

// PrepareRootEnv, set to "1" beside Env, makes the helper assemble the
// part of the sandbox's root that is the same for every run (a read-only
// copy of the host root, a minimal /dev, /proc, tmpfs over AlwaysHidden)
// before it reads its configuration, which must then ask for MountNS; the
// rest is added after. A spare so does that work before it is claimed.
const PrepareRootEnv = "CLAWTOOL_SANDBOX_PREPARE_ROOT"

// RootDirs are the host paths the sandbox's root holds besides what a
// policy grants (the system paths programs and their dynamic linker
// need; the sandbox package's SystemReadOnly): each a read-only copy of
// the host's tree there, or the same symbolic link. Paths missing on the
// host are left out.
var RootDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}

// ForkEnv, set to "1" beside PrepareRootEnv, makes the helper start the
// command as its child instead of becoming it (fork mode): the helper
// moves its children into a PID namespace of their own and mounts that
// namespace's /proc before it reads its configuration; after building
// the sandbox it forks the command from its main thread with raw system
// calls (see startCommand), so that the command's execve is made by a
// single-threaded process (from the Go helper's main thread it waits for
// the runtime's other threads to end),
// waits for it, writes an [Exit] record to ErrorFD and exits. The
// command is init of its own PID namespace, nested in the helper's,
// and does not see the helper. Needs a kernel whose procfs takes the
// "pidns" mount option (Linux 6.15); the probe reports it.
const ForkEnv = "CLAWTOOL_SANDBOX_FORK"

// ExitProbeNoFork is the exit status of a helper in probe mode whose
// namespaces were created but whose kernel cannot mount the /proc of a
// child PID namespace, which fork mode needs.
const ExitProbeNoFork = 3

// Ready is what a helper writes to ErrorFD, before Ack, when it is
// about to wait for its configuration: its runtime's threads are started
// and its root is prepared. A run waits for it before it moves the helper
// into its cgroup leaf, so that the leaf's process limit can count the
// helper's tasks (see ForkEnv). No setup error starts with it.
const Ready = 0x05

// Ack is what a helper writes to ErrorFD when it has read its
// configuration: a spare the supervisor claims may have been killed
// before, and its death is only certain as the absence of this byte. No
// setup error starts with it.
const Ack = 0x06

// Descriptors the supervisor hands the helper.
const (
	ConfigFD = 3 // read end of a pipe carrying the encoded Config
	ErrorFD  = 4 // write end of a pipe for Ready, Ack, then a setup error or an Exit record; closed by exec
	// MountFD is the helper's end of a unix socket over which the
	// supervisor passes the workspace as a detached mount tree
	// (Config.WorkspaceTree), before the configuration; absent (closed)
	// for a helper that builds no root.
	MountFD = 5
	TraceFD = 6 // write end of a pipe for stage timestamps (Config.Trace only)
)

// MaxConfig bounds the encoded configuration the helper reads.
const MaxConfig = 1 << 20

// ExitSetup is the helper's exit status when building the sandbox failed.
const ExitSetup = 125

// Layer bits of Config.Layers.
const (
	UserNS   = 1 << iota // drop capabilities (the namespace root has them all)
	MountNS              // build the root and pivot into it
	UTSNS                // set the host name
	Landlock             // restrict with a Landlock ruleset
	Seccomp              // load Config.Seccomp
	Rlimits              // set the resource limits
)

// Landlock access rights (linux/landlock.h), ABI 6.
const (
	AccessExecute   = 1 << 0
	AccessWriteFile = 1 << 1
	AccessReadFile  = 1 << 2
	AccessReadDir   = 1 << 3
	AccessRemoveDir = 1 << 4
	AccessRemoveFil = 1 << 5
	AccessMakeChar  = 1 << 6
	AccessMakeDir   = 1 << 7
	AccessMakeReg   = 1 << 8
	AccessMakeSock  = 1 << 9
	AccessMakeFifo  = 1 << 10
	AccessMakeBlock = 1 << 11
	AccessMakeSym   = 1 << 12
	AccessRefer     = 1 << 13
	AccessTruncate  = 1 << 14
	AccessIoctlDev  = 1 << 15

	// HandledFS are the file system rights the sandbox's ruleset handles:
	// every right of ABI 6, so what no rule grants is denied.
	HandledFS = 1<<16 - 1
	// HandledNet are TCP bind and connect, handled (and so denied) under
	// the network "none".
	HandledNet = 1<<0 | 1<<1
	// Scoped confines abstract unix sockets and signals to the sandbox.
	Scoped = 1<<0 | 1<<1

	// ReadDirs are the rights on read-only directories: read, list and
	// execute; ReadFiles the same on a file.
	ReadDirs  = AccessExecute | AccessReadFile | AccessReadDir
	ReadFiles = AccessExecute | AccessReadFile
	// WriteDirs are the rights on the workspace and /tmp: reading and
	// every kind of writing, but no refer (cross-directory links and
	// renames) and no device ioctls.
	WriteDirs = ReadDirs | AccessWriteFile | AccessRemoveDir | AccessRemoveFil | AccessMakeChar | AccessMakeDir |
		AccessMakeReg | AccessMakeSock | AccessMakeFifo | AccessMakeBlock | AccessMakeSym | AccessTruncate
	// WriteFiles are the rights on the writable devices.
	WriteFiles = AccessExecute | AccessReadFile | AccessWriteFile | AccessTruncate
)

// Exited is the first byte of an exit record (see [Exit]); no setup
// error starts with it.
const Exited = 0x07

// ExitSize is the length of an encoded exit record.
const ExitSize = 1 + 4 + 8 + 8 + 8 + 8 + 8

// Exit is how the command of a helper in fork mode ended: its wait status
// and the CPU time of the command and its descendants, as the helper's
// wait4 returned them, and what was left of the private /tmp when it had
// ended (statfs: bytes free and in all, inodes free).
type Exit struct {
	Status    uint32 // the wait status (syscall.WaitStatus)
	User, Sys uint64 // CPU time in nanoseconds
	// TmpFree and TmpSize are the private /tmp's free and total bytes,
	// TmpInodes its free inodes; all zero when statfs failed.
	TmpFree, TmpSize, TmpInodes uint64
}

// Encode returns e as ExitSize bytes: Exited, then the fields in little
// endian.
func (e Exit) Encode() []byte {
	b := append(make([]byte, 0, ExitSize), Exited)
	b = appendLE(b, uint64(e.Status), 4)
	b = appendLE(b, e.User, 8)
	b = appendLE(b, e.Sys, 8)
	b = appendLE(b, e.TmpFree, 8)
	b = appendLE(b, e.TmpSize, 8)
	return appendLE(b, e.TmpInodes, 8)
}

// appendLE appends the n low bytes of v to b, little endian.
func appendLE(b []byte, v uint64, n int) []byte {
	for i := range n {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// DecodeExit parses what Exit.Encode wrote; it reports false for anything
// else.
func DecodeExit(b []byte) (Exit, bool) {
	if len(b) != ExitSize || b[0] != Exited {
		return Exit{}, false
	}
	num := func(b []byte) uint64 {
		var v uint64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return v
	}
	return Exit{Status: uint32(num(b[1:5])), User: num(b[5:13]), Sys: num(b[13:21]),
		TmpFree: num(b[21:29]), TmpSize: num(b[29:37]), TmpInodes: num(b[37:45])}, true
}

// Config is what the supervisor tells the helper to build.
type Config struct {
	Argv, Env []string
	// Workspace is bound read-write and is the working directory; empty
	// means none (the working directory is /tmp).
	Workspace string
	// WorkspaceTree says that the supervisor opened the workspace itself
	// and passed it on MountFD as a detached mount (open_tree), with its
	// attributes set (nosuid, nodev, and an idmapping of the workspace's
	// owner onto the sandbox user when they differ): the helper attaches
	// it instead of looking Workspace up as the sandbox user, so a
	// workspace below a directory that user cannot search works too.
	WorkspaceTree bool
	// ReadOnly are bound read-only; Protected (relative to Workspace) are
	// re-bound read-only over the workspace; HideDirs get an empty tmpfs,
	// as AlwaysHidden do in every sandbox.
	ReadOnly, Protected, HideDirs []string
	// Layers is a set of the layer bits.
	Layers uint64
	// LandlockRead are granted ReadDirs (or ReadFiles) when they exist;
	// the workspace and /tmp WriteDirs; /dev/null, zero and full
	// WriteFiles. NoTCP handles (denies) TCP bind and connect.
	LandlockRead []string
	NoTCP        bool
	// Seccomp is the filter as struct sock_filter entries, in the
	// machine's byte order.
	Seccomp []byte
	// Limits; zero NProc or Data leaves that limit unset.
	CPU, FileSize, OpenFiles, NProc, Data uint64
	// Tmp is the size of the private /tmp in bytes.
	Tmp uint64
	// Budget, when not zero (and Workspace is set, with MountNS), is the
	// workspace's write budget in bytes: the workspace is mounted as an
	// overlay whose lower layer is the workspace and whose upper and work
	// directories ("upper", "work") live on a tmpfs of Budget bytes (and
	// one inode per 4 KiB), so that a write past it fails with ENOSPC and
	// nothing the run writes reaches the workspace. The helper makes that
	// tmpfs before anything else of the run and sends it to the supervisor
	// on MountFD as a detached mount (fsmount), before the proxy's socket:
	// the supervisor applies the upper layer to the workspace after the
	// run. The upper directory starts with the workspace root's mode.
	Budget uint64
	// Trace makes the helper write a timestamp (CLOCK_MONOTONIC, 8 bytes,
	// little endian) to TraceFD after each stage, in the order of the
	// Stages; in fork mode those of ForkStages follow, when the command
	// was started (its execve done) and when it was reaped.
	Trace bool
	// ProxyPort, when not zero, makes the helper bring the network
	// namespace's loopback up, listen on 127.0.0.1:ProxyPort, and send the
	// listening socket to the supervisor on MountFD (after the workspace
	// is received), before the command starts: the supervisor accepts
	// there and relays to its allow-list proxy.
	ProxyPort uint64
	// With UserNS, the run's share of what the kernel counts per user
	// and charges to the namespace's owner too (see shareUserCounts):
	// InotifyInstances and InotifyWatches are written to the namespace's
	// /proc/sys/user limits, SigPending and MsgQueue set as the soft and
	// hard RLIMIT_SIGPENDING and RLIMIT_MSGQUEUE. Zero is a share of
	// nothing, not an unset limit.
	InotifyInstances, InotifyWatches, SigPending, MsgQueue uint64
}

// Stages name the timestamps a tracing helper writes, in order; in fork
// mode ForkStages follow them.
var (
	Stages     = []string{"start", "prepare", "config", "mounts", "capabilities", "landlock", "seccomp", "rlimits", "exec"}
	ForkStages = []string{"started", "reaped"}
)

// Has reports whether c asks for the layer bit l.
func (c *Config) Has(l uint64) bool { return c.Layers&l != 0 }

// configVersion is the encoding's version; 5 added the protocol after it,
// 6 the user namespace's shares.
const configVersion = 6

// Encode returns c in the form Decode reads. It starts with this package's
// protocol (see SameProtocol).
func (c *Config) Encode() []byte {
	var e encoder
	e.num(configVersion)
	e.str(protocol)
	e.strs(c.Argv)
	e.strs(c.Env)
	e.str(c.Workspace)
	e.strs(c.ReadOnly)
	e.strs(c.Protected)
	e.strs(c.HideDirs)
	e.num(c.Layers)
	e.strs(c.LandlockRead)
	e.flag(c.NoTCP)
	e.str(string(c.Seccomp))
	for _, v := range []uint64{c.CPU, c.FileSize, c.OpenFiles, c.NProc, c.Data, c.Tmp} {
		e.num(v)
	}
	e.flag(c.Trace)
	e.flag(c.WorkspaceTree)
	e.num(c.ProxyPort)
	e.num(c.Budget)
	for _, v := range []uint64{c.InotifyInstances, c.InotifyWatches, c.SigPending, c.MsgQueue} {
		e.num(v)
	}
	return e.b
}

// SameProtocol reports whether b, an encoded configuration, was written by
// a build of this package from the same sources as this one: a helper
// program built apart from the program that starts it (see
// sandbox.NativeOptions.Helper) refuses a configuration of other sources,
// whose fields or meaning it may not share.
func SameProtocol(b []byte) bool {
	d := decoder{b: b}
	return d.num() == configVersion && d.str() == protocol && !d.bad
}

// Decode parses what Encode wrote. It reports false, and no Config, for
// malformed or truncated input.
func Decode(b []byte) (*Config, bool) {
	d := decoder{b: b}
	if d.num() != configVersion || d.str() != protocol {
		return nil, false
	}
	c := &Config{}
	c.Argv = d.strs()
	c.Env = d.strs()
	c.Workspace = d.str()
	c.ReadOnly = d.strs()
	c.Protected = d.strs()
	c.HideDirs = d.strs()
	c.Layers = d.num()
	c.LandlockRead = d.strs()
	c.NoTCP = d.num() == 1
	c.Seccomp = []byte(d.str())
	for _, v := range []*uint64{&c.CPU, &c.FileSize, &c.OpenFiles, &c.NProc, &c.Data, &c.Tmp} {
		*v = d.num()
	}
	c.Trace = d.num() == 1
	c.WorkspaceTree = d.num() == 1
	c.ProxyPort = d.num()
	c.Budget = d.num()
	for _, v := range []*uint64{&c.InotifyInstances, &c.InotifyWatches, &c.SigPending, &c.MsgQueue} {
		*v = d.num()
	}
	if d.bad || len(d.b) != 0 {
		return nil, false
	}
	return c, true
}

type encoder struct{ b []byte }

func (e *encoder) num(v uint64) {
	for v >= 0x80 {
		e.b = append(e.b, byte(v)|0x80)
		v >>= 7
	}
	e.b = append(e.b, byte(v))
}

func (e *encoder) flag(v bool) {
	if v {
		e.num(1)
	} else {
		e.num(0)
	}
}

func (e *encoder) str(s string) {
	e.num(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) strs(ss []string) {
	e.num(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) num() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if len(d.b) == 0 {
			d.bad = true
			return 0
		}
		c := d.b[0]
		d.b = d.b[1:]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	d.bad = true
	return 0
}

func (d *decoder) str() string {
	n := d.num()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) strs() []string {
	n := d.num()
	if d.bad || n > uint64(len(d.b)) { // each string takes at least one byte
		d.bad = true
		return nil
	}
	var out []string
	for range n {
		s := d.str()
		if d.bad {
			return nil
		}
		out = append(out, s)
	}
	return out
}
