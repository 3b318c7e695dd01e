package helper

// The forker is the helper program, or the supervisor's own program
// re-executed, in the mode Env=ForkerMode: a small (freshly exec'd),
// long-lived process a supervisor starts once and asks, over a unix
// socket (SOCK_SEQPACKET, descriptor ForkerFD), to start each helper. It
// clones the helper into its namespaces with CLONE_PARENT (so that the
// helper is the supervisor's child: the supervisor waits for it, reaps it
// and is charged its CPU, as for a helper it started itself), writes the
// user namespace's id maps and execs its own program as the helper. The
// point is the clone: Go's os/exec and syscall.ForkExec clone a child
// into a new user namespace without sharing the parent's memory (they
// share it only with CLONE_VFORK, which suspends the parent, and the
// parent must write the id maps while the child waits), so they copy the
// page tables of whoever makes the clone; the forker's are a fraction of
// a large supervisor's, and on amd64 it copies none: its clone shares its
// memory without suspending it (see startHelper).
//
// The conversation: the forker first sends ForkerHello followed by its
// protocol (see SameProtocol); then, for each ForkRequest the supervisor
// sends with the helper's descriptors (SCM_RIGHTS, in the order
// ForkRequest.Files says), it answers ForkStarted and the helper's process
// id (4 bytes, little-endian), or ForkRefused and why (at most
// MaxForkReply bytes in all). A request the forker cannot read exactly
// (short, long, truncated, other descriptors than it says) is refused,
// and nothing is started. The forker ends when the supervisor's end of the
// socket closes, or with the supervisor (its parent death signal).

// ForkerMode is the value of Env that makes the helper program a forker.
const ForkerMode = "forker"

// ForkerFD is the forker's end of its socket.
const ForkerFD = 3

// Forker replies, the first byte of each message the forker sends.
const (
	ForkerHello = 'H' // then the forker's protocol
	ForkStarted = 'P' // then the helper's process id, 4 bytes little-endian
	ForkRefused = 'E' // then why, as text
)

// MaxForkReply bounds a message of the forker's; MaxForkRequest a
// request's bytes (its descriptors are bounded by ForkMaxFiles).
const (
	MaxForkReply   = 512
	MaxForkRequest = 256
	ForkMaxFiles   = 7
)

// Bits of ForkRequest.Bits.
const (
	ForkMounts    = 1 << iota // the helper builds a root (PrepareRootEnv)
	ForkFork                  // the helper forks its command (ForkEnv); needs ForkMounts
	ForkSetgroups             // write "allow" to setgroups (a privileged supervisor drops root's groups)
	ForkStdin                 // a descriptor for the command's stdin is sent; /dev/null otherwise
	ForkMountFD               // a descriptor for MountFD is sent
	ForkTraceFD               // a descriptor for TraceFD is sent
	forkBitsAll   = 1<<iota - 1
)

// ForkNamespaces are the clone flags a request may ask for:
// CLONE_NEWUSER and CLONE_NEWPID (which it must: the helper, the
// supervisor's child, would otherwise see a parent other than the
// forker's pid its start checks its parent death signal against, and
// kill itself), CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUTS and
// CLONE_NEWNET. The values are Linux's.
const (
	cloneNewUser    = 0x10000000
	cloneNewPID     = 0x20000000
	ForkNamespaces  = cloneNewUser | cloneNewPID | 0x00020000 | 0x08000000 | 0x04000000 | 0x40000000
	forkRequestHead = 4 + 8 + 4 + 4 + 1 + 8
)

var forkMagic = [4]byte{'C', 'T', 'F', 'K'}

// A ForkRequest asks the forker for one helper: the clone flags of its
// namespaces, the host ids the sandbox's root maps to, Bits, and Tag, which
// names the clone until its exec (see CloneName). Its descriptors travel
// beside it, in this order: the command's stdout and stderr, ConfigFD's
// and ErrorFD's ends, then stdin, MountFD's and TraceFD's when Bits says
// so.
type ForkRequest struct {
	Flags    uint64
	UID, GID uint32
	Bits     uint8
	Tag      uint64
}

// CloneName is the name (the kernel's comm, 15 bytes) the forker gives the
// clone it makes for a request tagged tag, from the clone until the
// clone's exec replaces it. A clone whose exec failed keeps it as a
// zombie, in a session of its own and holding no descriptor: the
// supervisor, which chose tag at random and is the clone's parent, finds
// it by this name and reaps it.
func CloneName(tag uint64) string {
	const digits = "0123456789abcdef"
	b := []byte("ctfk00000000000")
	for i := len(b) - 1; i >= 4; i-- {
		b[i] = digits[tag&15]
		tag >>= 4
	}
	return string(b)
}

// Files is how many descriptors travel with r.
func (r ForkRequest) Files() int {
	n := 4
	for _, b := range []uint8{ForkStdin, ForkMountFD, ForkTraceFD} {
		if r.Bits&b != 0 {
			n++
		}
	}
	return n
}

// Encode returns r as the forker reads it, with this package's protocol.
func (r ForkRequest) Encode() []byte {
	b := make([]byte, 0, forkRequestHead+len(protocol))
	b = append(b, forkMagic[:]...)
	b = le(b, r.Flags, 8)
	b = le(b, uint64(r.UID), 4)
	b = le(b, uint64(r.GID), 4)
	b = append(b, r.Bits)
	b = le(b, r.Tag, 8)
	return append(b, protocol...)
}

func le(b []byte, v uint64, n int) []byte {
	for i := range n {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func unle(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// DecodeForkRequest parses what Encode wrote and checks it: the magic,
// this package's protocol, flags among ForkNamespaces with CLONE_NEWUSER and
// CLONE_NEWPID,
// known bits (ForkFork only with ForkMounts), and ids other than root's
// (the sandbox's root is never the host's). It returns why not as text.
func DecodeForkRequest(b []byte) (ForkRequest, string) {
	var r ForkRequest
	if len(b) < forkRequestHead || [4]byte(b[:4]) != forkMagic {
		return r, "malformed request"
	}
	if string(b[forkRequestHead:]) != protocol {
		return r, "the request's protocol is not this helper program's: " + otherSources
	}
	r.Flags = unle(b[4:12])
	r.UID = uint32(unle(b[12:16]))
	r.GID = uint32(unle(b[16:20]))
	r.Bits = b[20]
	r.Tag = unle(b[21:29])
	switch {
	case r.Flags&^ForkNamespaces != 0 || r.Flags&(cloneNewUser|cloneNewPID) != cloneNewUser|cloneNewPID:
		return r, "clone flags other than new user and PID namespaces and the namespaces the sandbox makes"
	case r.Bits&^forkBitsAll != 0:
		return r, "unknown request bits"
	case r.Bits&ForkFork != 0 && r.Bits&ForkMounts == 0:
		return r, "fork mode without a root"
	case r.UID == 0 || r.GID == 0:
		return r, "the sandbox's root mapped onto the host's root"
	}
	return r, ""
}

// otherSources is the end of the error of a helper program built from
// other sources than the supervisor.
const otherSources = "this helper program was built from other sources than the sandbox that started it; build it from the same version of the module"

// ForkerHelloOK checks the forker's first message: ForkerHello and this
// package's protocol. It returns why not as text, "" when it is.
func ForkerHelloOK(b []byte) string {
	if len(b) == 0 || b[0] != ForkerHello {
		return "the forker did not greet"
	}
	if string(b[1:]) != protocol {
		return "the forker's protocol is not the sandbox's: " + otherSources
	}
	return ""
}

// HelperEnv is the helper's whole environment: Env=1, and the settings
// that make its Go runtime start faster (one processor, no collector,
// no preemption signals; nothing else runs in it), with PrepareRootEnv
// when it builds a root and ForkEnv when it forks its command.
func HelperEnv(mounts, fork bool) []string {
	env := []string{Env + "=1", "GOMAXPROCS=1", "GOGC=off", "GODEBUG=asyncpreemptoff=1,updatemaxprocs=0"}
	if mounts {
		env = append(env, PrepareRootEnv+"=1")
		if fork {
			env = append(env, ForkEnv+"=1")
		}
	}
	return env
}

// Protocol returns the identity of this package's sources that a
// configuration, a fork request and a forker's greeting carry.
func Protocol() string { return protocol }
