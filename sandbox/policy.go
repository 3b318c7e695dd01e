package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Network says what network a sandboxed run may reach.
type Network string

const (
	// NetworkNone gives the run a network namespace of its own with only a
	// loopback interface that is down, and lets it create unix sockets
	// only. It is the default.
	NetworkNone Network = "none"
	// NetworkHost shares the host's network: the run may open TCP and UDP
	// sockets (IPv4 and IPv6) and unix sockets, nothing else.
	NetworkHost Network = "host"
	// NetworkAllow gives the run the network namespace of [NetworkNone]
	// and, inside it, one way out: a proxy the supervisor runs outside the
	// sandbox, which connects only to the hosts and ports of Policy.Allow
	// (see [HostRule]). The run's HTTP_PROXY, HTTPS_PROXY and ALL_PROXY
	// (and their lower-case forms) name the proxy; a program that ignores
	// them reaches nothing. Each refused attempt is listed in
	// Result.NetworkDenials.
	NetworkAllow Network = "allow"
)

// A HostRule names hosts and ports a [NetworkAllow] run may reach through
// the proxy.
type HostRule struct {
	// Host is an exact host name ("api.example.com"), "*." followed by a
	// suffix ("*.example.com": every name below example.com, not
	// example.com itself), or an IP literal ("203.0.113.7", "2001:db8::1",
	// written without brackets). Names are compared in lower case without
	// a trailing dot. A name is resolved by the proxy after it matched;
	// an address that is loopback, link-local, private (RFC 1918, RFC 4193),
	// carrier-grade NAT, multicast or unspecified, in IPv4, IPv6 or
	// IPv4-mapped IPv6, or an IPv6 address outside the global unicast
	// space 2000::/3, is refused unless a rule names that IP literal
	// itself: listing a name never opens an internal address.
	Host string
	// Ports are the TCP ports allowed for Host; empty means 443 and 80.
	Ports []int
}

// validate reports a rule the proxy could not apply as written.
func (r HostRule) validate() error {
	h := r.Host
	if h == "" {
		return errors.New("sandbox: an allow rule with no host")
	}
	for _, port := range r.Ports {
		if port < 1 || port > 65535 {
			return fmt.Errorf("sandbox: allow rule %q: port %d is out of range", h, port)
		}
	}
	if strings.HasPrefix(h, "[") {
		return fmt.Errorf("sandbox: allow rule %q: write an IPv6 literal without brackets", h)
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return nil
	}
	name := strings.TrimPrefix(h, "*.")
	if strings.Contains(name, "*") || name == "" {
		return fmt.Errorf("sandbox: allow rule %q: a wildcard is only \"*.\" followed by a suffix", h)
	}
	if !validHostName(name) {
		return fmt.Errorf("sandbox: allow rule %q is not a host name", h)
	}
	return nil
}

// validHostName reports whether name is letters, digits, hyphens and
// underscores in dot-separated labels of 1 to 63 bytes, 253 bytes at most.
func validHostName(name string) bool {
	name = strings.TrimSuffix(name, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// errAllowUnsupported is the refusal of a backend that cannot enforce
// [NetworkAllow].
func errAllowUnsupported(who string) error {
	return fmt.Errorf("sandbox: refusing to run: %s cannot enforce network %q (an allow list); use %q or the native backend", who, NetworkAllow, NetworkNone)
}

// ParseHostRule reads a rule written HOST, HOST:PORT or HOST:PORT,PORT...
// (an IPv6 literal in brackets when ports follow: "[2001:db8::1]:443"),
// as the --allow-host flag takes it, and validates it.
func ParseHostRule(s string) (HostRule, error) {
	var r HostRule
	host, ports := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return r, fmt.Errorf("sandbox: allow rule %q: no closing bracket", s)
		}
		host, ports = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if rest := s[end+1:]; rest != "" && !strings.HasPrefix(rest, ":") {
			return r, fmt.Errorf("sandbox: allow rule %q: want [ADDR]:PORT", s)
		}
	} else if strings.Count(s, ":") == 1 {
		host, ports, _ = strings.Cut(s, ":")
	}
	r.Host = host
	if ports != "" {
		for f := range strings.SplitSeq(ports, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				return r, fmt.Errorf("sandbox: allow rule %q: port %q is not a number", s, f)
			}
			r.Ports = append(r.Ports, n)
		}
	}
	return r, r.validate()
}

// DefaultAllowPorts returns the ports of a [HostRule] that names none. The
// slice is a fresh copy on each call: changing it changes nothing else.
func DefaultAllowPorts() []int { return slices.Clone(defaultAllowPorts) }

var defaultAllowPorts = []int{443, 80}

// A Layer names one mechanism of the Linux backend. [Probe] reports which
// layers the host offers; a run whose policy needs a layer the host lacks
// fails with a [*LayerError] naming it.
type Layer string

const (
	// LayerUserNS is a user namespace with the namespace root mapped to an
	// unprivileged host id, supplementary groups dropped, and every
	// capability dropped before the command starts.
	LayerUserNS Layer = "userns"
	// LayerMountNS is a mount namespace with a read-only root, a private
	// /tmp, tmpfs over daemon-socket directories, a minimal /dev, a fresh
	// /proc and the workspace bound read-write.
	LayerMountNS Layer = "mountns"
	// LayerPIDNS is a PID namespace: the command is its init, so the whole
	// process tree dies when it exits or is killed.
	LayerPIDNS Layer = "pidns"
	// LayerNetNS is a network namespace with no route out. [NetworkNone]
	// and [NetworkAllow] use it.
	LayerNetNS Layer = "netns"
	// LayerIPCNS and LayerUTSNS isolate System V IPC and the host name.
	LayerIPCNS Layer = "ipcns"
	LayerUTSNS Layer = "utsns"
	// LayerNoNewPrivs sets no_new_privs: setuid binaries gain nothing.
	LayerNoNewPrivs Layer = "no_new_privs"
	// LayerLandlock is a Landlock ruleset (ABI 6 or later): reads limited to
	// the system and read-only paths, writes to the workspace and /tmp, no
	// TCP bind or connect under [NetworkNone], and signals and abstract unix
	// sockets scoped to the sandbox.
	LayerLandlock Layer = "landlock"
	// LayerSeccomp is a seccomp filter denying kernel interfaces a tool does
	// not need (ptrace, bpf, io_uring, mount, nested user namespaces, ...)
	// and socket families outside the policy.
	LayerSeccomp Layer = "seccomp"
	// LayerRlimits are resource limits: CPU, file size, open files, core
	// dumps, processes and data segment.
	LayerRlimits Layer = "rlimits"
	// LayerCgroup is a cgroup leaf per run, made under the process's own
	// cgroup, bounding the whole run's memory and tasks (cgroup v2 when the
	// host delegates memory and pids there, else the v1 memory and pids
	// hierarchies when they are writable). It is not required: a run uses
	// it when [Probe] finds it, and [Limits] fall back to RLIMIT_DATA and
	// RLIMIT_NPROC otherwise; Result.Cgroup says which applied. A policy
	// may name it in Policy.Without to do without it.
	LayerCgroup Layer = "cgroup"
	// LayerWriteBudget bounds what a run writes to its workspace by
	// Limits.WriteBytes while it writes: the workspace is an overlay whose
	// upper layer lives on a tmpfs of that size (a write past it fails
	// with ENOSPC), applied to the host workspace by the supervisor after
	// the run (see Result.NotApplied). A run with a workspace and the
	// mount namespace uses it, and fails when the overlay cannot be
	// mounted; a policy may name it in Policy.Without to bind the
	// workspace directly instead, bounded per file only (Limits.FileSize).
	// A streamed run (Cmd.Stdout or Cmd.Stderr set: a long-running
	// server) always binds its workspace directly.
	LayerWriteBudget Layer = "write_budget"
)

// RequiredLayers returns the layers every run needs, in the order the
// helper applies them; [NetworkNone] adds [LayerNetNS]. A policy may name
// some of them in Policy.Without to run knowingly without them. The slice
// is a fresh copy on each call: changing it changes no run's policy.
func RequiredLayers() []Layer { return slices.Clone(requiredLayers) }

var requiredLayers = []Layer{
	LayerUserNS, LayerMountNS, LayerPIDNS, LayerIPCNS, LayerUTSNS,
	LayerNoNewPrivs, LayerLandlock, LayerSeccomp, LayerRlimits,
}

// DefaultProtected returns the workspace paths that stay read-only although
// the workspace is writable: files that other programs execute or trust
// later (git hooks and config, shell start-up files, editor and agent
// settings). The slice is a fresh copy on each call: changing it protects
// or exposes nothing.
func DefaultProtected() []string { return slices.Clone(defaultProtected) }

var defaultProtected = []string{
	".git/hooks", ".git/config", ".gitmodules", ".gitconfig",
	// What git reads in place of .git/config and .git/hooks: the common
	// directory a commondir file names, a worktree's own config, and the
	// linked worktrees' gitdirs (their commondir and config).
	".git/commondir", ".git/config.worktree", ".git/worktrees",
	".bashrc", ".bash_profile", ".zshrc", ".profile",
	// The rest of what runs code on the host when the workspace is a
	// home directory (or holds dotfiles): the other shells' startup and
	// logout files, ssh's (authorized_keys lets in, config and rc run
	// commands), git's XDG configuration, ~/.local/bin (ahead of
	// /usr/bin in a user's PATH), the user's systemd units and
	// autostart entries, and configurations whose credential helpers are
	// commands.
	".bash_login", ".bash_logout", ".zshenv", ".zprofile", ".zlogin", ".pam_environment",
	".ssh", ".config/git", ".config/fish", ".config/systemd", ".config/autostart", ".local/bin",
	".kube", ".aws/config", ".docker/config.json",
	".mcp.json", ".ripgreprc", ".vscode", ".idea",
	".claude/commands", ".claude/agents",
	// Agents' settings that run commands when an agent starts in the
	// directory: Claude Code's hooks, Gemini's and Cursor's MCP servers.
	".claude/settings.json", ".claude/settings.local.json", ".gemini/settings.json", ".cursor/mcp.json",
}

// SystemReadOnly returns the host paths a run may read and execute besides
// the workspace and Policy.ReadOnly: what programs and their dynamic linker
// need. Paths missing on the host are ignored. The slice is a fresh copy on
// each call: changing it opens or closes nothing.
func SystemReadOnly() []string { return slices.Clone(systemReadOnly) }

var systemReadOnly = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}

// DefaultEnv returns the variables a run gets when Policy.Env is nil. They
// are fixed values, not copied from the caller's environment. The slice is
// a fresh copy on each call: changing it changes no run's environment.
func DefaultEnv() []string { return slices.Clone(defaultEnv) }

var defaultEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
	"LANG=C.UTF-8",
	"HOME=/tmp",
	"TMPDIR=/tmp",
}

// Limits bound what one run may consume. A zero field takes its default,
// listed with each field.
type Limits struct {
	// CPU is the CPU time the run may use (RLIMIT_CPU); it is killed when
	// it reaches it. Default 30s.
	CPU time.Duration
	// Memory bounds the memory of the whole run (every process, page
	// cache and kernel memory included) when the run has a cgroup leaf
	// ([LayerCgroup]): the kernel's OOM killer ends the run at the limit
	// and its outcome is [MemoryLimit]. Without a cgroup it bounds the data
	// segment of each process (RLIMIT_DATA), which caps heap allocation
	// for Go, C and Python programs alike. Default 512 MiB.
	Memory int64
	// Processes bounds the number of processes and threads the run may
	// have at once: the cgroup's pids.max when the run has a cgroup leaf,
	// else RLIMIT_NPROC (counted inside the run's user namespace, or per
	// host user id for a policy without one). The threads of the helper
	// that waits beside the command are added to either, so 1 runs a
	// command that cannot fork. Default 256.
	Processes int
	// FileSize is the largest file the run may write (RLIMIT_FSIZE).
	// Default 64 MiB.
	FileSize int64
	// OpenFiles is the number of descriptors a process may hold
	// (RLIMIT_NOFILE). Default 256.
	OpenFiles int
	// Tmp is the size of the private /tmp. Default 64 MiB.
	Tmp int64
	// WriteBytes is the run's write budget, enforced by the kernel while
	// the run writes, twice: it bounds what the run changes in the
	// workspace ([LayerWriteBudget]: every file it creates or changes
	// counts whole, on a tmpfs of WriteBytes, applied to the host
	// workspace after the run), and the private /tmp, whose tmpfs is the
	// smaller of Tmp and WriteBytes. A write past either fails with
	// ENOSPC, and a run that then fails ends with [WriteLimit]. A policy
	// without [LayerWriteBudget] (or without the mount namespace), a
	// streamed run and a container backend write the workspace directly:
	// there only FileSize bounds each file (see docs/sandbox.md); a
	// container's /tmp is the smaller of Tmp and WriteBytes too. Default
	// 256 MiB.
	WriteBytes int64
	// Output is the number of bytes of stdout and stderr together the run
	// may write; the run is killed when it writes more and its outcome is
	// [OutputLimit]. Default 1 MiB.
	Output int
	// WaitDelay bounds how long the supervisor waits for output after the
	// run's process is gone, for a descendant that still holds a pipe.
	// Default 2s.
	WaitDelay time.Duration
	// GitSearch is the number of directory entries a backend (native or
	// container) reads before a run looking for repositories nested in the workspace
	// (a clone in vendor/lib), whose hooks and config it then protects
	// like the workspace's own (see Policy.Protected). The search goes at
	// most [GitSearchDepth] directories deep. A workspace with more
	// entries, or deeper, is refused: a repository the search did not see
	// would be left writable. The search runs only when the protected
	// paths name .git/hooks or .git/config. Default 200,000.
	GitSearch int
}

// Default limits; see [Limits] for what each bounds.
const (
	DefaultCPU       = 30 * time.Second
	DefaultMemory    = 512 << 20
	DefaultProcesses = 256
	DefaultFileSize  = 64 << 20
	DefaultOpenFiles = 256
	DefaultTmp       = 64 << 20
	DefaultWrite     = 256 << 20
	DefaultOutput    = 1 << 20
	DefaultWaitDelay = 2 * time.Second
	DefaultGitSearch = 200_000
)

// GitSearchDepth is how many directories deep below the workspace the
// search for nested repositories ([Limits].GitSearch) goes; a workspace
// with deeper directories is refused.
const GitSearchDepth = 64

// WithDefaults returns l with every zero field set to its default (listed
// with each field of [Limits]): the limits a backend enforces.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

func (l Limits) withDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Memory, DefaultMemory)
	def(&l.FileSize, DefaultFileSize)
	def(&l.Tmp, DefaultTmp)
	def(&l.WriteBytes, DefaultWrite)
	if l.CPU <= 0 {
		l.CPU = DefaultCPU
	}
	if l.Processes <= 0 {
		l.Processes = DefaultProcesses
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	if l.Output <= 0 {
		l.Output = DefaultOutput
	}
	if l.WaitDelay <= 0 {
		l.WaitDelay = DefaultWaitDelay
	}
	if l.GitSearch <= 0 {
		l.GitSearch = DefaultGitSearch
	}
	return l
}

// A Policy describes what a sandboxed run may touch. The zero Policy runs
// with no workspace (the working directory is the private /tmp), no
// network, [DefaultEnv] and default [Limits].
type Policy struct {
	// Workspace is a host directory the run may read and write, and its
	// working directory. It must be absolute. When the caller is root the
	// workspace belongs to its owner: the run gets an idmapped mount of it
	// mapping the directory's owner (uid and gid) onto the sandbox user
	// (see UID), so the owner's files are the command's to change as
	// their modes allow and what the command makes belongs to the owner on
	// the host; other users' ids are not mapped. The supervisor opens it,
	// so the sandbox user need not be able to reach it. On a file system
	// that cannot be idmapped, and for a caller that is not root, the
	// command is the sandbox user (the caller) to every file, and a
	// caller that is not root must be able to reach the workspace.
	Workspace string
	// ReadOnly are further absolute host paths the run may read and
	// execute, besides [SystemReadOnly]. A path that is a unix socket,
	// or that is, lies in or holds a directory the sandbox hides (/run,
	// /var/run, $XDG_RUNTIME_DIR: "/" holds them) or /proc or /dev (of
	// which a run gets views of its own), as written or through links, is
	// refused: a read-only bind does not stop a connect, and the host's
	// views show its processes and devices. So is a path that lies in
	// the workspace or is reached through it (a link on its way, or its
	// target, there), the workspace itself as written aside: a run could
	// make it a link to any host path, which the next run's bind would
	// follow.
	ReadOnly []string
	// Protected are paths relative to Workspace that stay read-only. Nil
	// means [DefaultProtected]; an empty non-nil slice protects nothing.
	// A protected path that is, or passes through, a symbolic link makes
	// the run fail. Protection holds for the structure: every directory
	// above a protected path inside the workspace is a mount point of its
	// own for the run, writable but impossible to rename, remove or
	// replace, and a file found where such a directory was expected (a
	// .git file naming the repository) is read-only. When the list names
	// .git/hooks or .git/config, the hooks and config of the repositories
	// git would use inside the workspace are protected too, with what git
	// reads in their place (commondir, config.worktree, worktrees): the
	// one a .git file names and submodules' repositories under modules,
	// and the same for each repository nested in the workspace (a
	// directory below it holding a .git entry) that the backend's search
	// finds before the run (native and container backends); a workspace past that search's bounds
	// (Limits.GitSearch, [GitSearchDepth]) is refused.
	//
	// A path that does not exist when the run starts cannot be protected
	// in the run's view: a read-only mount needs an existing file or
	// directory to cover, and making one would change the user's workspace
	// (Landlock cannot deny a name beneath a writable directory either).
	// Through the write budget ([LayerWriteBudget], the default) such a
	// change is never applied to the host workspace; a run that binds the
	// workspace directly (a streamed run, or one without that layer) in a
	// workspace without .git can create .git/hooks/pre-commit, which a
	// later git init keeps. The run's Result lists such paths in
	// ProtectedChanged either way, and the workspace file tools refuse
	// protected paths whether or not they exist; give a workspace its .git
	// (or an empty .vscode ...) before running commands in it to have
	// them protected in the run's view too.
	Protected []string
	// Network is the network the run may reach; empty means [NetworkNone].
	Network Network
	// Allow lists the hosts and ports a [NetworkAllow] run may reach
	// through the supervisor's proxy. It must be empty for any other
	// Network, and is refused empty for NetworkAllow (use [NetworkNone]).
	Allow []HostRule
	// DenyUnixSockets forbids creating unix sockets too, so the run can
	// open no socket at all.
	DenyUnixSockets bool
	// Env is the run's whole environment as NAME=value pairs; the caller's
	// environment is never inherited. Nil means [DefaultEnv]. A variable
	// whose name looks like a secret's (see [SecretWord]: KEY, SECRET,
	// TOKEN, PASSWORD ... in any case), whose value holds a URL with
	// credentials (scheme://user:password@host, scheme://token@host) or a
	// credential of a well-known format (GitHub, GitLab, Slack and AWS
	// tokens, sk- API keys, a bearer token, a PEM private key) is refused
	// unless Secrets names it.
	Env []string
	// Secrets names the variables of Env the caller passes knowingly
	// although their names look like secrets (see [SecretWord]): the run
	// gets those, and any other such name is still refused. A name listed
	// here that Env does not set is refused too, so a misspelt name
	// cannot go unnoticed.
	Secrets []string
	// AllowShell lets tools built on this policy run a shell command line
	// (sh -c); otherwise they take an argument vector only.
	AllowShell bool
	// Limits bound the run's resources.
	Limits Limits
	// UID is the host user id the sandbox's root is mapped to when the
	// caller is root. Zero means 65534 (nobody). A caller that is not root
	// always maps its own id.
	UID int
	// Image is the container image a container backend runs the command
	// in; empty means the backend's own image. The native backend refuses
	// a policy that names an image.
	Image string
	// Without lists layers this policy knowingly runs without. Any other
	// layer of [RequiredLayers] the host lacks makes the run fail. Doing
	// without [LayerUserNS] drops every namespace; the command then runs as
	// the unprivileged UID on the host.
	Without []Layer
}

// DefaultUID is the host user id the sandbox root maps to when the caller
// is root and Policy.UID is zero.
const DefaultUID = 65534

// secretWords are the name fragments that mark a variable as a secret
// wherever they appear in its name.
// (WEBHOOK: a webhook's URL is its credential, in its path.)
var secretWords = []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "WEBHOOK"}

// secretNames are whole names of secrets that none of the words or parts
// mark: sshpass(1) reads its password from SSHPASS.
var secretNames = []string{"SSHPASS"}

// secretSegments mark a variable as a secret when one of the parts of its
// name between non-alphanumeric characters is exactly one of them
// (SMTP_PASS, MYSQL_PWD, NPM_CONFIG__AUTH, GH_PAT), but not as part of a
// longer word (GIT_AUTHOR_NAME, COMPASS_DIR, PATH) nor as the whole name
// (PWD, the shell's working directory).
var secretSegments = []string{"PASS", "PWD", "AUTH", "PAT", "CREDS", "COOKIE"}

// Validate reports the first problem that makes p unusable: relative or
// overlapping paths, protected paths that escape the workspace, unknown
// network or layer names, or a secret-looking environment variable.
func (p Policy) Validate() error {
	if p.Workspace != "" && !filepath.IsAbs(p.Workspace) {
		return fmt.Errorf("sandbox: workspace %q is not an absolute path", p.Workspace)
	}
	if p.Workspace != "" {
		// Judged as written and as the supervisor will open it (through
		// any links).
		paths := []string{filepath.Clean(p.Workspace)}
		if real, err := filepath.EvalSymlinks(p.Workspace); err == nil {
			paths = append(paths, real)
		}
		for _, w := range paths {
			if sys := systemDirOf(w); sys != "" {
				return fmt.Errorf("sandbox: workspace %q is %s, a system directory: the run could change the system's files as their owner; use a directory of the project's own", p.Workspace, sys)
			}
		}
	}
	for _, ro := range p.ReadOnly {
		if !filepath.IsAbs(ro) {
			return fmt.Errorf("sandbox: read-only path %q is not absolute", ro)
		}
		if why := exposesDaemons(ro); why != "" {
			return fmt.Errorf("sandbox: read-only path %q %s: a read-only bind stops writes, not a connect to a daemon's socket; name the files the run needs instead", ro, why)
		}
		// The workspace itself is no name a run can change (a climb, "..",
		// is: the kernel climbs from where a link led).
		itself := filepath.Clean(ro) == filepath.Clean(p.Workspace) && !slices.Contains(strings.Split(ro, "/"), "..")
		if p.Workspace != "" && !itself && reachesInto(ro, p.Workspace) {
			// The run writes the workspace: it could make the name a link
			// to any host path, which the next run's bind (the engine's,
			// as root) or Landlock rule would follow and grant it.
			return fmt.Errorf("sandbox: read-only path %q lies in the workspace %q or is reached through it, where a run could make it a link to any host path the next run would then be given; the workspace is readable already, name paths outside it", ro, p.Workspace)
		}
	}
	for _, pr := range p.Protected {
		if pr == "" {
			// Its clean form would be "."; an empty entry is a mistake.
			return errors.New("sandbox: protected path \"\" is empty")
		}
	}
	for _, pr := range p.protected() {
		if !filepath.IsLocal(pr) {
			return fmt.Errorf("sandbox: protected path %q is not inside the workspace", pr)
		}
	}
	switch p.Network {
	case "", NetworkNone, NetworkHost:
		if len(p.Allow) > 0 {
			return fmt.Errorf("sandbox: an allow list needs network %q, not %q", NetworkAllow, p.network())
		}
	case NetworkAllow:
		if len(p.Allow) == 0 {
			return fmt.Errorf("sandbox: network %q with an empty allow list; use %q", NetworkAllow, NetworkNone)
		}
		for _, r := range p.Allow {
			if err := r.validate(); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("sandbox: unknown network %q (want %q, %q or %q)", p.Network, NetworkNone, NetworkAllow, NetworkHost)
	}
	for _, l := range p.Without {
		if !slices.Contains(requiredLayers, l) && l != LayerNetNS && l != LayerCgroup && l != LayerWriteBudget {
			return fmt.Errorf("sandbox: unknown layer %q", l)
		}
	}
	_, err := p.environ()
	return err
}

// systemDirs are directories a workspace may not be, nor be inside: the
// run gets write access to the workspace as its owner.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/boot", "/proc", "/sys", "/dev", "/root"}

// systemDirOf says which system directory the clean absolute path w is or
// is inside ("/" for the root itself), or "" when none. The home of root
// is refused itself, not what is below it (a project there is fine).
func systemDirOf(w string) string {
	if w == "/" {
		return "the root directory"
	}
	for _, d := range systemDirs {
		if w == d {
			return d
		}
		if d != "/root" && strings.HasPrefix(w, d+"/") {
			return "inside " + d
		}
	}
	return ""
}

// ProtectedPaths returns the workspace paths p keeps read-only: Protected,
// or [DefaultProtected] when Protected is nil, each in its clean form
// (".git/hooks/" and "./.git/hooks" are ".git/hooks"). A backend reads
// them here; the slice is a fresh copy.
func (p Policy) ProtectedPaths() []string { return slices.Clone(p.protected()) }

// Environ returns the run's whole environment: Env, or [DefaultEnv] when
// Env is nil, with an error for a malformed entry or a secret-looking name,
// as [Policy.Validate] refuses them. The slice is a fresh copy.
func (p Policy) Environ() ([]string, error) { return p.environ() }

// protected returns the protected paths, each in its clean form
// (path.Clean): every check compares them with names such as ".git/hooks",
// and ".git/hooks/" or "./.git/hooks" written in a policy must protect
// what the clean name does.
func (p Policy) protected() []string {
	if p.Protected == nil {
		return defaultProtected
	}
	for i, pr := range p.Protected {
		if path.Clean(pr) != pr {
			out := slices.Clone(p.Protected)
			for j := i; j < len(out); j++ {
				out[j] = path.Clean(out[j])
			}
			return out
		}
	}
	return p.Protected
}

func (p Policy) network() Network {
	if p.Network == "" {
		return NetworkNone
	}
	return p.Network
}

// layers returns the layers p needs, in the order they are applied.
func (p Policy) layers() []Layer {
	var out []Layer
	for _, l := range requiredLayers {
		if l == LayerIPCNS && p.network() != NetworkHost {
			out = append(out, LayerNetNS)
		}
		out = append(out, l)
	}
	noUserNS := slices.Contains(p.Without, LayerUserNS)
	return slices.DeleteFunc(out, func(l Layer) bool {
		// The other namespaces are built inside the user namespace: without
		// it they would be the host's.
		return slices.Contains(p.Without, l) || noUserNS && namespaceLayer(l)
	})
}

func namespaceLayer(l Layer) bool {
	switch l {
	case LayerMountNS, LayerPIDNS, LayerNetNS, LayerIPCNS, LayerUTSNS:
		return true
	}
	return false
}

// environ returns the run's environment, refusing secret-looking names and
// malformed entries.
func (p Policy) environ() ([]string, error) {
	env := p.Env
	if env == nil {
		env = defaultEnv
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsRune(kv, 0) {
			return nil, fmt.Errorf("sandbox: environment entry %q is not NAME=value", kv)
		}
		if w, bad := secretName(name); bad && !slices.Contains(p.Secrets, name) {
			return nil, fmt.Errorf("sandbox: environment variable %s is refused: a name containing %s is passed to a sandbox only when Policy.Secrets names it", name, w)
		}
		if _, value, _ := strings.Cut(kv, "="); !slices.Contains(p.Secrets, name) {
			if urlCredentials(value) {
				return nil, fmt.Errorf("sandbox: environment variable %s is refused: its value holds credentials in a URL (user:password@ or token@); it is passed to a sandbox only when Policy.Secrets names it", name)
			}
			if kind := secretValue(value); kind != "" {
				return nil, fmt.Errorf("sandbox: environment variable %s is refused: its value holds %s; it is passed to a sandbox only when Policy.Secrets names it", name, kind)
			}
		}
		out = append(out, kv)
	}
	for _, name := range p.Secrets {
		if !slices.ContainsFunc(out, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }) {
			return nil, fmt.Errorf("sandbox: Secrets names %q, which the environment does not set", name)
		}
	}
	return out, nil
}

// SecretWord returns the fragment that makes the variable name look like
// a secret, which a policy refuses in its environment unless
// Policy.Secrets names it, or "" for a name that does not: KEY, SECRET,
// TOKEN, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL or WEBHOOK anywhere in
// the name, PASS, PWD, AUTH, PAT, CREDS or COOKIE as a whole part of a
// name of several parts (SMTP_PASS, MYSQL_PWD; not GIT_AUTHOR_NAME nor
// PWD), or the whole name SSHPASS, in any case.
func SecretWord(name string) string {
	w, _ := secretName(name)
	return w
}

func secretName(name string) (string, bool) {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return w, true
		}
	}
	if slices.Contains(secretNames, up) {
		return up, true
	}
	parts := strings.FieldsFunc(up, func(r rune) bool { return !('A' <= r && r <= 'Z' || '0' <= r && r <= '9') })
	if len(parts) > 1 {
		for _, part := range parts {
			if slices.Contains(secretSegments, part) {
				return part, true
			}
		}
	}
	return "", false
}

// secretFormats are credentials whose format tells them apart wherever
// they appear in a value: a prefix at the start of a word (after a
// character that is not a letter, digit, _ or -), followed by at least
// min characters of the token's alphabet.
var secretFormats = []struct {
	prefix, kind string
	min          int
}{
	{"ghp_", "a GitHub token", 30}, {"gho_", "a GitHub token", 30}, {"ghu_", "a GitHub token", 30},
	{"ghs_", "a GitHub token", 30}, {"ghr_", "a GitHub token", 30}, {"github_pat_", "a GitHub token", 30},
	{"glpat-", "a GitLab token", 16}, {"xoxb-", "a Slack token", 10}, {"xoxp-", "a Slack token", 10},
	{"xoxa-", "a Slack token", 10}, {"xoxs-", "a Slack token", 10}, {"AKIA", "an AWS access key id", 16},
	{"ASIA", "an AWS access key id", 16}, {"sk-", "an API key", 20}, {"Bearer ", "a bearer token", 16},
	{"sk_live_", "a Stripe key", 20}, {"rk_live_", "a Stripe key", 20}, {"sk_test_", "a Stripe key", 20},
	{"hf_", "a Hugging Face token", 30}, {"AIza", "a Google API key", 30}, {"npm_", "an npm token", 30},
	{"pypi-", "a PyPI token", 50}, {"hvs.", "a Vault token", 20}, {"AGE-SECRET-KEY-1", "an age secret key", 50},
}

// secretValue names the kind of credential value holds (a token of a
// well-known format, a PEM private key), or "".
func secretValue(value string) string {
	if strings.Contains(value, "-----BEGIN") && strings.Contains(value, "PRIVATE KEY") {
		return "a private key"
	}
	word := func(c byte) bool { return isAlnumByte(c) || c == '_' || c == '-' }
	if jsonWebToken(value, word) {
		return "a JSON web token"
	}
	if userPassword(value) {
		return "credentials (user:password@, a connection string)"
	}
	if passwordField(value) {
		return "a password (password=, pwd=: a connection string)"
	}
	for _, f := range secretFormats {
		for i := 0; ; {
			j := strings.Index(value[i:], f.prefix)
			if j < 0 {
				break
			}
			at := i + j
			i = at + 1
			if at > 0 && word(value[at-1]) {
				continue
			}
			n := 0
			for k := at + len(f.prefix); k < len(value) && word(value[k]); k++ {
				n++
			}
			if n >= f.min {
				return f.kind
			}
		}
	}
	return ""
}

// jsonWebToken reports whether value holds a JSON web token: "eyJ" (a
// base64 JSON object) at the start of a word, at least 10 characters of
// base64url, a dot and "eyJ" again (the claims).
func jsonWebToken(value string, word func(byte) bool) bool {
	for i := 0; ; {
		j := strings.Index(value[i:], "eyJ")
		if j < 0 {
			return false
		}
		at := i + j
		i = at + 1
		if at > 0 && word(value[at-1]) {
			continue
		}
		k := at + 3
		for k < len(value) && word(value[k]) {
			k++
		}
		if k-at >= 13 && strings.HasPrefix(value[k:], ".eyJ") {
			return true
		}
	}
}

// userPassword reports whether value holds user:password@ outside a URL's
// authority (which urlCredentials judges): Go's MySQL connection strings
// (app:pw@tcp(db:3306)/app, app:pw@/app). The part before each @, back
// to a separator, holding a colon with text on both sides counts.
func userPassword(value string) bool {
	for at := strings.IndexByte(value, '@'); at >= 0; {
		start := strings.LastIndexFunc(value[:at], func(r rune) bool {
			return strings.ContainsRune(" \t\n,;\"'<>()/=?&@", r)
		}) + 1
		if user, pass, ok := strings.Cut(value[start:at], ":"); ok && user != "" && pass != "" {
			return true
		}
		next := strings.IndexByte(value[at+1:], '@')
		if next < 0 {
			return false
		}
		at += 1 + next
	}
	return false
}

// passwordField reports whether value holds a password as a key=value
// field of a connection string or query (libpq's password=, ODBC's
// Pwd=, ?password=), in any case, with a value.
func passwordField(value string) bool {
	low := strings.ToLower(value)
	for _, key := range []string{"password=", "passwd=", "pwd=", "pass="} {
		for i := 0; ; {
			j := strings.Index(low[i:], key)
			if j < 0 {
				break
			}
			at := i + j
			i = at + 1
			if at > 0 && !strings.ContainsRune(" \t\n;&?,", rune(low[at-1])) {
				continue
			}
			if end := at + len(key); end < len(low) && !strings.ContainsRune(" \t\n;&,", rune(low[end])) {
				return true
			}
		}
	}
	return false
}

func isAlnumByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// urlCredentials reports whether value holds a URL with a user part
// (scheme://user:password@host, scheme://token@host) anywhere in it: a
// database or proxy URL carries its password there, and a token is often
// given as the user.
func urlCredentials(value string) bool {
	for {
		i := strings.Index(value, "://")
		if i < 0 {
			return false
		}
		value = value[i+3:]
		end := strings.IndexFunc(value, func(r rune) bool {
			return strings.ContainsRune("/?#,; \t\n\"'<>", r)
		})
		authority := value
		if end >= 0 {
			authority = value[:end]
		}
		if at := strings.LastIndexByte(authority, '@'); at > 0 {
			return true
		}
	}
}

// A LayerError reports that a run was refused because the host lacks a
// layer its policy needs. Nothing ran.
type LayerError struct {
	Layer  Layer
	Reason string
}

func (e *LayerError) Error() string {
	return fmt.Sprintf("sandbox: refusing to run: layer %s is unavailable on this host: %s", e.Layer, e.Reason)
}

// ErrUnsupported is returned on platforms without a sandbox backend.
var ErrUnsupported = errors.New("sandbox: no sandbox backend for this platform")

// hiddenDirs are the directories every backend hides from a run (the
// native one under a tmpfs, a container has its own), because the
// daemons' sockets live there: the system's, and the caller's
// $XDG_RUNTIME_DIR.
func hiddenDirs() []string {
	dirs := []string{"/run", "/var/run"}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		dirs = append(dirs, filepath.Clean(xdg))
	}
	return dirs
}

// exposesDaemons says why the read-only path ro would give a run the
// daemons' sockets, or "": it is a unix socket, or it is, lies in or
// holds a directory the sandbox hides (hiddenDirs), judged as written
// and through links, on both sides. A read-only bind does not stop a
// connect: neither the mount, nor Landlock, nor the seccomp filter looks
// at a connect to a named socket.
func exposesDaemons(ro string) string {
	if st, err := os.Stat(ro); err == nil && st.Mode()&fs.ModeSocket != 0 {
		return "is a unix socket"
	}
	forms := func(p string) []string {
		out := []string{filepath.Clean(p)}
		if real, err := filepath.EvalSymlinks(p); err == nil && real != out[0] {
			out = append(out, real)
		}
		return out
	}
	within := func(p, dir string) bool {
		return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
	}
	for _, h := range hiddenDirs() {
		for _, hf := range forms(h) {
			for _, rf := range forms(ro) {
				switch {
				case within(rf, hf):
					return "is or lies in " + h + ", which the sandbox hides"
				case within(hf, rf):
					return "holds " + h + ", which the sandbox hides"
				}
			}
		}
	}
	// The views the sandbox makes of its own: the host's would show
	// every process (/proc: their command lines, and the environment of
	// those of the sandbox user's id, other runs') and its devices
	// (/dev). /sys may be read (the cgroup files): the run is the
	// sandbox user there.
	for _, v := range []string{"/proc", "/dev"} {
		for _, rf := range forms(ro) {
			switch {
			case within(rf, v):
				return "is or lies in " + v + ", of which the sandbox makes a view of its own"
			case within(v, rf):
				return "holds " + v + ", of which the sandbox makes a view of its own"
			}
		}
	}
	return ""
}
