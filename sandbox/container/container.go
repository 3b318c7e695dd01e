package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/internal/netfwd"
	"github.com/miniopenclaw/tool/sandbox/internal/outcome"
	"github.com/miniopenclaw/tool/sandbox/internal/protected"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	mcontainer "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Workspace is where a container backend mounts Policy.Workspace
// inside the container; it is the command's working directory.
const Workspace = "/workspace"

// Labels every container of a container backend carries.
const (
	// LabelOwner names the owner given in Options.Owner.
	LabelOwner = "io.clawtool.owner"
	// LabelProcess identifies the host process that created the
	// container: "HOST/PID/START", where START tells a reused process id
	// apart on Linux.
	LabelProcess = "io.clawtool.process"
	// LabelBackend is a random value per [*Backend]: Close removes every
	// container carrying its value, including one whose creation a
	// cancelled call did not see finish.
	LabelBackend = "io.clawtool.backend"
)

// Options configure a [*Backend].
type Options struct {
	// Image is the image a run uses when its policy names none.
	Image string
	// Warm keeps one running container per image and policy, instead of
	// a fresh container per call, and runs each call in it through a call
	// server: this program's own binary, mounted read-only into the
	// container with its loader and libraries and running as the
	// container's main process, forks and executes each command there
	// (about a millisecond, where an engine exec costs tens). The server
	// keeps root's CAP_SETUID, CAP_SETGID and CAP_KILL to start a call as
	// the sandbox user and to kill its processes; the call itself runs
	// with no capability, no_new_privs, in a session of its own, with the
	// policy's environment added to the image's.
	//
	// Calls in one warm container run one at a time: when a call ends,
	// times out or floods its output, every process of the container but
	// its init and the server is killed, and the server reaps them all
	// before it reports the call's end, so nothing a call started is
	// left for the next one. (Concurrent calls would kill each other's
	// processes, and the container's OOM and fork counters, read before
	// and after a call, would no longer say whose call hit the limit;
	// calls that should run in parallel need containers of their own,
	// such as another Backend.) The container's resource limits
	// (RLIMIT_CPU, FSIZE, NOFILE, CORE) apply to the server and each call
	// inherits them, its CPU time counting from zero; a server that has
	// used half of Limits.CPU itself is replaced after the call.
	//
	// When the server cannot run (this program is not a Linux binary of
	// the engine's architecture, the engine cannot see this host's files,
	// a user-namespace remapped engine cannot reach the socket ...), the
	// warm container falls back to running each call with the engine's
	// exec, and every Result says so (Mode [sandbox.ModeWarmExec], Fallback the
	// reason); that mode needs sh, kill and sleep in the image. Nothing
	// ever falls back to the host.
	Warm bool
	// WarmExec makes a warm container run every call with the engine's
	// exec instead of the call server, as its fallback does: slower, but
	// nothing of this program enters the container.
	WarmExec bool
	// MaxWarm is the most warm containers the Backend keeps at once (one
	// per image, policy and workspace: a policy whose environment differs
	// is another container). Zero means [DefaultMaxWarm]. A call that
	// needs a warm container the Backend does not hold while it holds
	// MaxWarm retires the least recently used one no call is using; when
	// every one is in use, the call runs in a fresh container of its own
	// and its Result.Fallback says why. Each warm container holds its
	// memory, processes and /tmp until it is retired, so without a cap a
	// caller that varies its policies (an environment value per call)
	// would pile them up on the engine.
	MaxWarm int
	// Owner is the value of [LabelOwner] on every container. Empty means
	// "clawtool". [Backend.Cleanup] removes only the owner's orphans.
	Owner string
	// Host is the engine's address, such as unix:///run/podman/podman.sock.
	// Empty means $DOCKER_HOST, or the engine's default socket.
	Host string
	// CPUs is the number of CPUs a container may use at once. Zero means 1.
	CPUs float64
	// NetworkLog receives the network denials of runs under
	// [sandbox.NetworkAllow], one Warn record each (host, port, addr,
	// reason, client); nil means [slog.Default]. They are in
	// Result.NetworkDenials either way.
	NetworkLog *slog.Logger
}

// DefaultMaxWarm is the number of warm containers a Backend keeps at once
// when [Options.MaxWarm] is zero.
const DefaultMaxWarm = 4

// A Backend is a [sandbox.Backend] that runs each command in a container of a
// Docker-compatible engine (Docker, or Podman's compatible socket).
//
// A container gets: the policy's workspace bound read-write at
// [Workspace] with its protected paths bound read-only over it and every
// directory above one bound onto itself, so that it cannot be moved
// aside (see protectMounts; Result.ProtectedChanged lists what a call
// changed all the same, compared on the host before and after it);
// Policy.ReadOnly bound read-only at the same paths; a read-only root
// file system with a tmpfs /tmp of the smaller of Limits.Tmp
// and Limits.WriteBytes, and a /dev/shm of the same size; no network (only a
// loopback interface) unless the policy asks for the host's; every
// capability dropped (a warm container's call server keeps three, which no
// call gets: see Options.Warm); no_new_privs; the engine's
// default seccomp profile; the unprivileged user Policy.UID (default
// [sandbox.DefaultUID]); memory, process and CPU limits from the cgroup and the
// other [sandbox.Limits] as resource limits; an init process that reaps orphans;
// and the policy's environment only (plus the image's own ENV and the
// engine's HOSTNAME).
//
// Result.Mode says how a call ran: [sandbox.ModeFresh], [sandbox.ModeWarmServer] or
// [sandbox.ModeWarmExec]. In a fresh container or through the engine's exec, the
// engine reports a command killed by signal N as exit status 128+N and a
// Backend classifies such a status as the signal; a memory-limit kill is
// read from the engine's OOM flag (or, for an exec, the cgroup's counter).
// The call server reports the command's own wait status and CPU time, and
// the container cgroup's OOM and refused-fork counters across the call, so
// its results are classified exactly as the native backend's.
//
// A Backend never falls back to the host: no reachable engine, a missing
// image or a limit the engine cannot enforce is an error naming it.
// Close removes every container it made.
type Backend struct {
	opts  Options
	cli   *client.Client
	label string // LabelProcess value of this process
	id    string // LabelBackend value of this backend

	engineArch string // the engine's architecture, as its info names it

	// The call server's files, resolved once; serverExe replaces
	// os.Executable in tests.
	serverExe  string
	serverOnce sync.Once
	server     *serverImage
	serverErr  error

	mu     sync.Mutex
	closed bool
	live   map[string]bool      // containers made and not yet removed
	images map[string]bool      // images found in the engine
	warm   map[string]*warmSlot // warm containers by image and policy
	tick   uint64               // counts slot uses, for least recently used
}

// A warmSlot is one warm container; its mutex is held for the whole of a
// call.
type warmSlot struct {
	mu       sync.Mutex
	id       string                   // the container, "" when none runs
	mounts   string                   // the protected mounts it was started with (see slot)
	srv      atomic.Pointer[callConn] // its call server; nil when calls use exec
	fallback string                   // why calls use exec although the server is wanted
	pid      int                      // the container's init on the host, 0 until looked up

	// Under Backend.mu: when the slot was last handed out, and whether it
	// was evicted (removed from Backend.warm; set with the slot's mutex
	// held too, so a caller that locked the slot after its eviction sees
	// it and looks again).
	used    uint64
	evicted bool
}

// New connects to the engine, checks that it can enforce every
// limit (memory, processes, CPU quota, seccomp), and removes containers an
// earlier process of the same owner on this host left behind (see
// [Backend.Cleanup]).
func New(ctx context.Context, opts Options) (*Backend, error) {
	if opts.Owner == "" {
		opts.Owner = "clawtool"
	}
	if opts.CPUs <= 0 {
		opts.CPUs = 1
	}
	copts := []client.Opt{client.FromEnv}
	if opts.Host != "" {
		copts = append(copts, client.WithHost(opts.Host))
	}
	cli, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("sandbox: container engine: %w", err)
	}
	c := &Backend{opts: opts, cli: cli, label: processLabel(os.Getpid()), id: randomHex(12), live: map[string]bool{}, images: map[string]bool{}, warm: map[string]*warmSlot{}}
	if err := c.check(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	if _, err := c.Cleanup(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return c, nil
}

func (c *Backend) check(ctx context.Context) error {
	if _, err := c.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("sandbox: refusing to run: no container engine reachable at %s: %w", c.cli.DaemonHost(), err)
	}
	info, err := c.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fmt.Errorf("sandbox: container engine info: %w", err)
	}
	missing := func(what string) error {
		return fmt.Errorf("sandbox: refusing to run: the container engine at %s cannot enforce %s", c.cli.DaemonHost(), what)
	}
	c.engineArch = info.Info.Architecture
	switch in := info.Info; {
	case !in.MemoryLimit:
		return missing("a memory limit")
	case !in.PidsLimit:
		return missing("a process (pids) limit")
	case !in.CPUCfsQuota || !in.CPUCfsPeriod:
		return missing("a CPU quota")
	case !slices.ContainsFunc(in.SecurityOptions, func(s string) bool { return strings.Contains(s, "name=seccomp") }):
		return missing("a seccomp profile")
	}
	return nil
}

// Close removes every container c made, running or not, and closes the
// connection. Runs after Close fail.
func (c *Backend) Close() error {
	c.mu.Lock()
	c.closed = true
	ids := make([]string, 0, len(c.live))
	for id := range c.live {
		ids = append(ids, id)
	}
	for _, s := range c.warm {
		// Without taking s.mu: a call running now fails.
		if cc := s.conn(); cc != nil {
			cc.conn.Close()
		}
	}
	c.warm = map[string]*warmSlot{}
	c.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, c.remove(id))
	}
	// Containers whose creation a cancelled call never saw finish.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelBackend+"="+c.id),
	})
	errs = append(errs, err)
	for _, item := range list.Items {
		errs = append(errs, c.remove(item.ID))
	}
	errs = append(errs, c.cli.Close())
	return errors.Join(errs...)
}

// Cleanup removes the containers of c's owner that a process on this host
// made and that outlived it (a crash, a kill), and returns how many it
// removed. Containers of live processes are left alone.
func (c *Backend) Cleanup(ctx context.Context) (int, error) {
	list, err := c.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelOwner+"="+c.opts.Owner),
	})
	if err != nil {
		return 0, fmt.Errorf("sandbox: list containers: %w", err)
	}
	host, _ := os.Hostname()
	n := 0
	for _, item := range list.Items {
		h, pid, ok := parseProcessLabel(item.Labels[LabelProcess])
		if !ok || h != host || processLabel(pid) == item.Labels[LabelProcess] {
			continue
		}
		if _, err := c.cli.ContainerRemove(ctx, item.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !errdefs.IsNotFound(err) {
			return n, fmt.Errorf("sandbox: remove orphaned container %.12s: %w", item.ID, err)
		}
		n++
	}
	return n, nil
}

// processLabel is "HOST/PID/START" for a running process, or "" when
// the process is gone.
func processLabel(pid int) string {
	host, _ := os.Hostname()
	start, ok := processStart(pid)
	if !ok {
		return ""
	}
	return host + "/" + strconv.Itoa(pid) + "/" + start
}

func parseProcessLabel(s string) (host string, pid int, ok bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	return parts[0], pid, err == nil && pid > 0
}

// processStart returns a token that changes when pid is reused: its start
// time on Linux. ok is false when no such process runs.
func processStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
			return "", true
		}
		return "", false
	}
	// Fields after the command name, which is in parentheses and may
	// contain spaces; the start time is field 22.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 20 {
		return "", true
	}
	return f[19], true
}

// image resolves the policy's image and checks the engine has it.
func (c *Backend) image(ctx context.Context, p sandbox.Policy) (string, error) {
	img := p.Image
	if img == "" {
		img = c.opts.Image
	}
	if img == "" {
		return "", errors.New("sandbox: refusing to run: neither the policy nor the container backend names an image")
	}
	c.mu.Lock()
	seen := c.images[img]
	c.mu.Unlock()
	if seen {
		// Checked before; an image removed since makes creating the
		// container fail, which fails the run just as well.
		return img, nil
	}
	if _, err := c.cli.ImageInspect(ctx, img); err != nil {
		if errdefs.IsNotFound(err) {
			return "", fmt.Errorf("sandbox: refusing to run: image %q is not in the container engine (it is never pulled implicitly): %w", img, os.ErrNotExist)
		}
		return "", fmt.Errorf("sandbox: image %q: %w", img, err)
	}
	c.mu.Lock()
	c.images[img] = true
	c.mu.Unlock()
	return img, nil
}

// network is the policy's network, [sandbox.NetworkNone] when it names none.
func network(p sandbox.Policy) sandbox.Network {
	if p.Network == "" {
		return sandbox.NetworkNone
	}
	return p.Network
}

// containerUID is the user a container's command runs as.
func containerUID(p sandbox.Policy) int {
	if p.UID <= 0 {
		return sandbox.DefaultUID
	}
	return p.UID
}

// protectMounts returns what a container binds to hold the protected
// paths (relative to ws, slash-separated) for their structure, as the
// native backend's mounts do: parents, every directory between ws and a
// protected path (.git for .git/hooks), each bound read-write onto itself
// so that the run can neither rename, remove nor replace it (the kernel
// refuses to move a mount point: EBUSY); and leaves, each existing
// protected path and a file met where a directory of one was expected (a
// .git file naming the repository, as in worktrees and submodules), bound
// read-only. A missing path is left out (a mount needs something to
// cover; the comparison after the run reports one the run made). A path
// that is, or passes through, a symbolic link is refused: the engine
// would follow it on the host.
func protectMounts(ws string, paths []string) (parents, leaves []string, err error) {
	look := func(rel string) (os.FileInfo, error) {
		st, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(rel)))
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("sandbox: protected path %s: %w", rel, err)
		case st.Mode()&os.ModeSymlink != 0:
			return nil, fmt.Errorf("sandbox: refusing to run: protected path %s is, or passes through, a symbolic link", rel)
		}
		return st, nil
	}
	for _, p := range paths {
		p = filepath.ToSlash(filepath.Clean(p))
		if !filepath.IsLocal(p) {
			return nil, nil, fmt.Errorf("sandbox: protected path %s is not inside the workspace", p)
		}
		leaf := p
		for i := 0; i < len(p); i++ {
			if p[i] != '/' {
				continue
			}
			st, err := look(p[:i])
			if err != nil {
				return nil, nil, err
			}
			if st == nil {
				leaf = ""
				break
			}
			if !st.IsDir() {
				leaf = p[:i]
				break
			}
			if !slices.Contains(parents, p[:i]) {
				parents = append(parents, p[:i])
			}
		}
		if leaf == "" {
			continue
		}
		st, err := look(leaf)
		if err != nil {
			return nil, nil, err
		}
		if st != nil && !slices.Contains(leaves, leaf) {
			leaves = append(leaves, leaf)
		}
	}
	// A leaf is a mount point of its own already; binding it twice is
	// refused by the engine.
	parents = slices.DeleteFunc(parents, func(p string) bool { return slices.Contains(leaves, p) })
	return parents, leaves, nil
}

// mountIdentity names the files behind a configuration's bind mounts
// (device and inode): a warm container keeps what it bound when it
// started, so a workspace or .git replaced on the host since needs a new
// one.
func mountIdentity(opts client.ContainerCreateOptions) string {
	var b strings.Builder
	for _, m := range opts.HostConfig.Mounts {
		id := "?"
		if st, err := os.Stat(m.Source); err == nil && protected.ID(st) != "" {
			id = protected.ID(st)
		}
		b.WriteString(id + " ")
	}
	return b.String()
}

// create builds the container configuration for p running cmd, binding
// the workspace with paths (its protected paths, see protectMounts).
func (c *Backend) create(p sandbox.Policy, paths []string, img string, env, cmd []string, stdin bool) (client.ContainerCreateOptions, error) {
	l := p.Limits.WithDefaults()
	uid := containerUID(p)
	work := "/tmp"
	var mounts []mount.Mount
	if p.Workspace != "" {
		ws := filepath.Clean(p.Workspace)
		work = Workspace
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: ws, Target: Workspace})
		parents, leaves, err := protectMounts(ws, paths)
		if err != nil {
			return client.ContainerCreateOptions{}, err
		}
		// The engine mounts the shallowest target first (it sorts them),
		// so each protected path lands on its parent's own mount.
		for _, rel := range parents {
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: filepath.Join(ws, rel), Target: Workspace + "/" + rel})
		}
		for _, rel := range leaves {
			mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: filepath.Join(ws, rel), Target: Workspace + "/" + rel, ReadOnly: true})
		}
	}
	for _, ro := range p.ReadOnly {
		ro = filepath.Clean(ro)
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: ro, Target: filepath.ToSlash(ro), ReadOnly: true})
	}
	netMode := mcontainer.NetworkMode("none")
	if network(p) == sandbox.NetworkHost {
		netMode = "host"
	}
	pids := int64(l.Processes)
	// /tmp is bounded by the write budget as the native backend's is:
	// the smaller of Tmp and WriteBytes.
	tmp := min(l.Tmp, l.WriteBytes)
	cpu := int64((l.CPU + time.Second - 1) / time.Second)
	initProc := true
	return client.ContainerCreateOptions{
		Config: &mcontainer.Config{
			Image:           img,
			Cmd:             cmd,
			Env:             env,
			User:            fmt.Sprintf("%d:%d", uid, uid),
			WorkingDir:      work,
			Labels:          map[string]string{LabelOwner: c.opts.Owner, LabelProcess: c.label, LabelBackend: c.id},
			AttachStdout:    true,
			AttachStderr:    true,
			AttachStdin:     stdin,
			OpenStdin:       stdin,
			StdinOnce:       stdin,
			NetworkDisabled: netMode == "none",
		},
		HostConfig: &mcontainer.HostConfig{
			Mounts:         mounts,
			NetworkMode:    netMode,
			ReadonlyRootfs: true,
			Tmpfs:          map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%d,nr_inodes=%d,mode=1777", tmp, max(tmp/4096, 1024))},
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges:true"},
			Init:           &initProc,
			LogConfig:      mcontainer.LogConfig{Type: "none"},
			IpcMode:        "private",
			// /dev/shm, the private IPC namespace's tmpfs, is bounded as
			// /tmp is: the engine's default (64 MiB) let a call write
			// past the budget there.
			ShmSize: tmp,
			Resources: mcontainer.Resources{
				Memory:     l.Memory,
				MemorySwap: l.Memory,
				PidsLimit:  &pids,
				NanoCPUs:   int64(c.opts.CPUs * 1e9),
				Ulimits: []*mcontainer.Ulimit{
					{Name: "cpu", Soft: cpu, Hard: cpu},
					{Name: "fsize", Soft: l.FileSize, Hard: l.FileSize},
					{Name: "nofile", Soft: int64(l.OpenFiles), Hard: int64(l.OpenFiles)},
					{Name: "core", Soft: 0, Hard: 0},
				},
			},
		},
	}, nil
}

// track records a container just created as this backend's, for Close to
// remove; on a backend already closed it removes the container at once.
func (c *Backend) track(id string) error {
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.live[id] = true
	}
	c.mu.Unlock()
	if closed {
		c.remove(id)
		return errors.New("sandbox: container backend is closed")
	}
	return nil
}

// remove force-removes a container with a context of its own, so that a
// cancelled call still cleans up.
func (c *Backend) remove(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	c.mu.Lock()
	delete(c.live, id)
	c.mu.Unlock()
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("sandbox: remove container %.12s: %w", id, err)
	}
	return nil
}

// Run runs argv under p in a container, with the contract of [sandbox.Run]:
// stdout and stderr are capped at Limits.Output together, ctx bounds the
// run, and the Result classifies how it ended.
//
// Under [sandbox.NetworkAllow] the container has no network, as under
// [sandbox.NetworkNone], and one way out: this program's binary runs as
// the container's main process, as a warm container's call server does
// (see [Options]), listens on the container's loopback at
// [sandbox.ProxyPort] and joins each connection to a unix socket bound
// into the container, where a [sandbox.Proxy] this backend serves
// outside the container applies Policy.Allow; it then starts the command
// as the sandbox user, without capabilities, with HTTP_PROXY, HTTPS_PROXY
// and ALL_PROXY naming it (see [sandbox.ProxyEnv]). Every refusal is in
// Result.NetworkDenials and logged (Options.NetworkLog). The forwarder
// keeps root's CAP_SETUID and CAP_SETGID, which the command never has; its
// threads are added to the container's process limit. When the forwarder
// cannot run (see the call server's conditions in [Options]) the run
// fails: it never gets another network. A warm backend runs such a call,
// and a streamed one (see [Backend.RunCmd]), in a fresh container, and
// its Result's Fallback says so.
func (c *Backend) Run(ctx context.Context, p sandbox.Policy, argv []string, stdin io.Reader) (*sandbox.Result, error) {
	return c.run(ctx, p, argv, stdin, streams{})
}

// RunCmd runs cmd in a fresh container (see [sandbox.CmdRunner]): the
// command's standard output and error go to cmd.Stdout and cmd.Stderr as
// it writes them, when set (what goes there is neither kept in the Result
// nor counted against Limits.Output), cmd.Stdin is copied to it as it is
// read, and cmd.ConfigureProxy configures the proxy of a run under
// [sandbox.NetworkAllow] (its Rules stay Policy.Allow). A long-running
// server (an MCP server on stdio) runs this way, for as long as ctx
// lasts.
func (c *Backend) RunCmd(ctx context.Context, cmd *sandbox.Cmd) (*sandbox.Result, error) {
	return c.run(ctx, cmd.Policy, cmd.Args, cmd.Stdin, streams{cmd.Stdout, cmd.Stderr, cmd.ConfigureProxy})
}

// streams are what a [sandbox.Cmd] adds to a run: the writers its output
// streams to, and its proxy's configuration.
type streams struct {
	stdout, stderr io.Writer
	proxy          func(*sandbox.Proxy)
}

func (st streams) streamed() bool { return st.stdout != nil || st.stderr != nil }

// forwarderThreads are added to the process limit of a container whose
// main process is the network forwarder: the Go runtime's threads.
const forwarderThreads = 16

func (c *Backend) run(ctx context.Context, p sandbox.Policy, argv []string, stdin io.Reader, st streams) (*sandbox.Result, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	env, _ := p.Environ()
	if network(p) == sandbox.NetworkAllow {
		env = sandbox.ProxyEnv(env)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("sandbox: container backend is closed")
	}
	img, err := c.image(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The protected paths, and what they are before the run: the
	// mounts hold their structure, and the comparison after the run
	// reports what still changed (a path the run created, which no mount
	// could cover).
	var (
		ws     string
		paths  []string
		before protected.State
	)
	if p.Workspace != "" {
		ws = filepath.Clean(p.Workspace)
		if paths, err = protected.Git(ws, p.ProtectedPaths()); err != nil {
			return nil, protected.Refusal(err)
		}
		// Repositories nested in the workspace, searched before every
		// call: a warm container's mounts are part of its key, so one
		// made before a repository appeared is not used for it.
		paths, err = protected.Nested(ws, paths, protected.Bounds{Entries: p.Limits.WithDefaults().GitSearch, Depth: sandbox.GitSearchDepth})
		if err != nil {
			return nil, protected.Refusal(err)
		}
		// A container binds the workspace directly: a protected file's
		// other name would be the protected file, writable.
		if err := protected.HardLinked(ws, paths, protected.Limits{}); err != nil {
			return nil, protected.Refusal(err)
		}
		// Bounded in total: past the bounds the call does not start.
		if before, err = protected.Snapshot(ws, paths, protected.Limits{}); err != nil {
			return nil, fmt.Errorf("sandbox: refusing to run: %w", err)
		}
	}
	var r *sandbox.Result
	fallback := ""
	switch {
	case c.opts.Warm && network(p) == sandbox.NetworkAllow:
		fallback = "a run under a network allow list gets a fresh container of its own: its main process is the network forwarder"
	case c.opts.Warm && st.streamed():
		fallback = "a streamed run gets a fresh container of its own"
	}
	if c.opts.Warm && fallback == "" {
		r, err = c.runWarm(ctx, p, paths, img, env, argv, stdin)
	} else {
		r, err = c.runFresh(ctx, p, paths, img, env, argv, stdin, st)
		if r != nil {
			r.Fallback = fallback
		}
	}
	if r != nil && ws != "" {
		r.ProtectedChanged = before.Changed(ws, paths)
	}
	return r, err
}

// Layers returns the layers a container run reports in
// Result.Layers: the native layers whose container counterpart the engine
// applies. The slice is a fresh copy on each call.
func Layers() []sandbox.Layer { return slices.Clone(layerList) }

var layerList = []sandbox.Layer{
	sandbox.LayerUserNS, sandbox.LayerMountNS, sandbox.LayerPIDNS, sandbox.LayerNetNS, sandbox.LayerIPCNS, sandbox.LayerUTSNS,
	sandbox.LayerNoNewPrivs, sandbox.LayerSeccomp, sandbox.LayerRlimits,
}

func layersFor(p sandbox.Policy) []sandbox.Layer {
	if network(p) != sandbox.NetworkHost {
		return slices.Clone(layerList)
	}
	return slices.DeleteFunc(slices.Clone(layerList), func(l sandbox.Layer) bool { return l == sandbox.LayerNetNS })
}

// a call is one command's streams and the reason the backend killed it.
type call struct {
	budget         *outcome.Budget
	stdout, stderr *outcome.Stream
	killedFor      atomic.Value

	// Kills run in goroutines of their own: the output copier must keep
	// draining the stream while the engine kills, or the engine can block
	// on writing to it. finish waits for them.
	mu       sync.Mutex
	finished bool
	kills    sync.WaitGroup
	copied   chan struct{}
}

// goKill runs kill in a goroutine that finish waits for; after finish it
// does nothing.
func (k *call) goKill(kill func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.finished {
		return
	}
	k.kills.Add(1)
	go func() {
		defer k.kills.Done()
		kill()
	}()
}

func (k *call) finish() {
	k.mu.Lock()
	k.finished = true
	k.mu.Unlock()
	k.kills.Wait()
}

// killer returns the call's kill: the first cause wins and is recorded,
// and do runs once, off the caller's goroutine (see goKill); an output
// overflow kills the call for OutputLimit.
func (k *call) killer(do func()) func(why sandbox.Outcome) {
	kill := func(why sandbox.Outcome) {
		if k.killedFor.CompareAndSwap(nil, why) {
			k.goKill(do)
		}
	}
	k.budget.OnOverflow(func() { kill(sandbox.OutputLimit) })
	return kill
}

func newCall(limit int) *call {
	b := outcome.NewBudget(limit)
	return &call{budget: b, stdout: b.Stream(), stderr: b.Stream(), copied: make(chan struct{})}
}

// pump copies the engine's multiplexed stream into the capped buffers (or
// the streams' writers, for those set) and stdin into the command.
func (k *call) pump(h client.HijackedResponse, stdin io.Reader, st streams) {
	var stdout, stderr io.Writer = k.stdout, k.stderr
	if st.stdout != nil {
		stdout = st.stdout
	}
	if st.stderr != nil {
		stderr = st.stderr
	}
	if stdin != nil {
		go func() {
			io.Copy(h.Conn, stdin)
			h.CloseWrite()
		}()
	}
	go func() {
		defer close(k.copied)
		stdcopy.StdCopy(stdout, stderr, h.Reader)
	}()
}

func (k *call) result(p sandbox.Policy, start time.Time, status int, oom bool) *sandbox.Result {
	r := &sandbox.Result{
		Stdout:    k.stdout.Bytes(),
		Stderr:    k.stderr.Bytes(),
		Truncated: k.budget.Exceeded(),
		Duration:  time.Since(start),
		Layers:    layersFor(p),
		ExitCode:  status,
	}
	if status > 128 && status <= 128+64 {
		r.Signal = syscall.Signal(status - 128).String()
	}
	switch why, _ := k.killedFor.Load().(sandbox.Outcome); {
	case why != "":
		r.Outcome = why
	case oom:
		r.Outcome = sandbox.MemoryLimit
	case status == 128+24: // SIGXCPU at Limits.CPU
		r.Outcome = sandbox.CPULimit
	case r.Signal != "":
		r.Outcome = sandbox.Signaled
		r.ExitCode = -1
	case status != 0:
		r.Outcome = sandbox.Outcome(outcome.ClassifyFailure(r.Stderr))
	default:
		r.Outcome = sandbox.Exited
	}
	if r.Outcome != sandbox.Exited && r.Signal != "" {
		r.ExitCode = -1
	}
	return r
}

// drain waits for the output stream to end, at most d after the command
// is gone, then closes it.
func (k *call) drain(h client.HijackedResponse, d time.Duration) {
	select {
	case <-k.copied:
	case <-time.After(d):
	}
	h.Close()
	<-k.copied
}

func (c *Backend) runFresh(ctx context.Context, p sandbox.Policy, paths []string, img string, env, argv []string, stdin io.Reader, st streams) (_ *sandbox.Result, err error) {
	opts, err := c.create(p, paths, img, env, argv, stdin != nil)
	if err != nil {
		return nil, err
	}
	var proxy *sandbox.Proxy
	if network(p) == sandbox.NetworkAllow {
		var stop func()
		proxy, stop, err = c.forward(p, argv, &opts, st.proxy)
		if err != nil {
			return nil, fmt.Errorf("sandbox: refusing to run under network %q: the network forwarder cannot run in the container (the run never gets another network): %w", sandbox.NetworkAllow, err)
		}
		defer stop()
	}
	l := p.Limits.WithDefaults()
	bg := context.WithoutCancel(ctx)
	start := time.Now()
	created, err := c.cli.ContainerCreate(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: create container: %w", err)
	}
	id := created.ID
	if err := c.track(id); err != nil {
		return nil, err
	}
	defer c.remove(id)
	att, err := c.cli.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true, Stdin: stdin != nil})
	if err != nil {
		return nil, fmt.Errorf("sandbox: attach to container: %w", err)
	}
	k := newCall(l.Output)
	k.pump(att.HijackedResponse, stdin, st)
	defer k.finish()
	kill := k.killer(func() { c.cli.ContainerKill(bg, id, client.ContainerKillOptions{Signal: "KILL"}) })
	if _, err := c.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		att.Close()
		<-k.copied
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox: %w before the command started", ctx.Err())
		}
		if msg := err.Error(); strings.Contains(msg, "not found") || strings.Contains(msg, "no such file") {
			return nil, fmt.Errorf("sandbox: command %q: %w (%s)", argv[0], os.ErrNotExist, msg)
		}
		return nil, fmt.Errorf("sandbox: start container: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { kill(sandbox.TimedOut) })
	defer stop()
	wait := c.cli.ContainerWait(bg, id, client.ContainerWaitOptions{Condition: mcontainer.WaitConditionNotRunning})
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		att.Close()
		<-k.copied
		return nil, fmt.Errorf("sandbox: wait for container: %w", err)
	}
	k.drain(att.HijackedResponse, l.WaitDelay)
	ins, err := c.cli.ContainerInspect(bg, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("sandbox: inspect container: %w", err)
	}
	state := ins.Container.State
	if state.ExitCode == 127 && k.killedFor.Load() == nil {
		// The init process reports a command it could not execute.
		if msg := string(k.stderr.Bytes()); strings.Contains(msg, "exec "+argv[0]+" failed") || strings.HasPrefix(msg, netfwd.NotFound) {
			return nil, fmt.Errorf("sandbox: command %q: %w (%s)", argv[0], os.ErrNotExist, strings.TrimSpace(msg))
		}
	}
	r := k.result(p, start, state.ExitCode, state.OOMKilled)
	r.Mode = sandbox.ModeFresh
	if proxy != nil {
		r.NetworkDenials, r.NetworkDenialsDropped = proxy.Denials()
	}
	return r, nil
}

// warmKey identifies the warm container a policy and image share.
func warmKey(img string, opts client.ContainerCreateOptions) string {
	b, _ := json.Marshal(opts)
	return img + "\x00" + string(b)
}

// slot returns the warm slot for opts, locked, with no container running
// in it unless that container was started with opts' mounts.
//
// A slot is keyed by everything but the mounts that protect paths below
// [Workspace] (the policy's own protected list stands for them): those
// follow the workspace, which changes between calls (a repository cloned
// in it, or made by a call, is protected from the next call on), and a
// container's mounts are fixed when it starts. A call whose mounts differ
// from those of the slot's container (their targets, or the files behind
// any mount: see [mountIdentity]) retires it and starts a new one, so a
// workspace has one warm container however often its protected set
// changes.
func (c *Backend) slot(p sandbox.Policy, opts client.ContainerCreateOptions) *warmSlot {
	base := opts
	hc := *opts.HostConfig
	base.HostConfig = &hc
	hc.Mounts = slices.DeleteFunc(slices.Clone(hc.Mounts), func(m mount.Mount) bool { return strings.HasPrefix(m.Target, Workspace+"/") })
	protectedList, _ := json.Marshal(p.ProtectedPaths())
	key := warmKey(opts.Config.Image, base) + "\x00" + string(protectedList)
	mounts := warmKey(opts.Config.Image, opts) + "\x00" + mountIdentity(opts)
	for {
		c.mu.Lock()
		s, ok := c.warm[key]
		var victim *warmSlot
		if !ok {
			if len(c.warm) >= c.maxWarm() {
				if victim = c.evictLocked(); victim == nil {
					c.mu.Unlock()
					return nil
				}
			}
			s = &warmSlot{}
			c.warm[key] = s
		}
		c.tick++
		s.used = c.tick
		c.mu.Unlock()
		if victim != nil {
			// Removed before the new slot's container can start: the
			// Backend never runs more than MaxWarm warm containers.
			c.retire(victim)
			victim.mu.Unlock()
		}
		s.mu.Lock()
		c.mu.Lock()
		evicted := s.evicted
		c.mu.Unlock()
		if evicted {
			// Evicted between the lookup and the lock: its container is
			// gone and the map no longer holds it.
			s.mu.Unlock()
			continue
		}
		if s.mounts != mounts {
			if s.id != "" {
				c.retire(s)
			}
			s.mounts = mounts
		}
		return s
	}
}

// maxWarm is Options.MaxWarm or its default.
func (c *Backend) maxWarm() int {
	if c.opts.MaxWarm > 0 {
		return c.opts.MaxWarm
	}
	return DefaultMaxWarm
}

// evictLocked removes from c.warm the least recently used slot no call
// holds and returns it locked, for the caller to retire and unlock; nil
// when every slot is in use. c.mu is held.
func (c *Backend) evictLocked() *warmSlot {
	var victim *warmSlot
	var victimKey string
	for k, s := range c.warm {
		if victim != nil && s.used >= victim.used {
			continue
		}
		if !s.mu.TryLock() {
			continue
		}
		if victim != nil {
			victim.mu.Unlock()
		}
		victim, victimKey = s, k
	}
	if victim != nil {
		victim.evicted = true
		delete(c.warm, victimKey)
	}
	return victim
}

// conn returns the slot's server connection for Close, which does not
// hold the slot's lock.
func (s *warmSlot) conn() *callConn {
	return s.srv.Load()
}

// start starts the slot's container: with the call server unless the
// options or an earlier failure say exec, falling back to exec (and
// recording why) when the server cannot start. A cancelled ctx is an
// error, never a reason to fall back.
func (c *Backend) start(ctx context.Context, s *warmSlot, opts client.ContainerCreateOptions) error {
	if !c.opts.WarmExec && s.fallback == "" {
		id, cc, err := c.startServer(ctx, opts)
		if err == nil {
			s.id = id
			s.srv.Store(cc)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("sandbox: start warm container: %w", ctx.Err())
		}
		s.fallback = fmt.Sprintf("the call server could not start in image %s, so each call runs with the engine's exec: %v", opts.Config.Image, err)
	}
	// The keeper runs as root (without capabilities) so that the calls,
	// run as the sandbox user, cannot kill it when they kill leftovers.
	cfg := *opts.Config
	opts.Config = &cfg
	cfg.Cmd = []string{"sleep", "2147483647"}
	cfg.User = "0:0"
	cfg.Env = nil // each call gets the policy's environment
	cfg.AttachStdout, cfg.AttachStderr = false, false
	created, err := c.cli.ContainerCreate(ctx, opts)
	if err == nil {
		if err = c.track(created.ID); err == nil {
			if _, err = c.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
				c.remove(created.ID)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("sandbox: start warm container: %w", err)
	}
	s.id = created.ID
	return nil
}

// retire removes a warm container that can no longer be trusted (after
// an OOM kill its flag stays set; a call server that broke the protocol
// or left a process); the next call starts a new one.
func (c *Backend) retire(s *warmSlot) {
	if cc := s.conn(); cc != nil {
		cc.conn.Close()
		s.srv.Store(nil)
	}
	if s.id != "" {
		c.remove(s.id)
		s.id = ""
	}
	s.pid = 0
}

// protectHeld reports whether the warm container still holds the mounts
// that protect the workspace's paths (opts' binds below [Workspace]). A
// mount whose source the host removes or renames (a user's rm -rf .git,
// another run's rename outside any sandbox) is detached from every
// container by the kernel, so a container started earlier may have lost
// one, and a new directory may even reuse the old inode. It reads the
// container's mount table through the host's /proc; when it cannot (an
// engine on another host or in a pid namespace of its own) it reports
// false, and each call gets a new container.
func (c *Backend) protectHeld(ctx context.Context, s *warmSlot, opts client.ContainerCreateOptions) bool {
	var targets []string
	for _, m := range opts.HostConfig.Mounts {
		if strings.HasPrefix(m.Target, Workspace+"/") {
			targets = append(targets, m.Target)
		}
	}
	if len(targets) == 0 {
		return true
	}
	if s.pid == 0 {
		ins, err := c.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
		if err != nil || ins.Container.State == nil || ins.Container.State.Pid <= 0 {
			return false
		}
		s.pid = ins.Container.State.Pid
	}
	f, err := os.Open("/proc/" + strconv.Itoa(s.pid) + "/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4<<20))
	held := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		if fields := strings.Fields(line); len(fields) > 4 {
			held[unescapeMountinfo(fields[4])] = true
		}
	}
	for _, t := range targets {
		if !held[t] {
			return false
		}
	}
	return true
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of a
// path in /proc/PID/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (c *Backend) runWarm(ctx context.Context, p sandbox.Policy, paths []string, img string, env, argv []string, stdin io.Reader) (*sandbox.Result, error) {
	opts, err := c.create(p, paths, img, env, nil, false)
	if err != nil {
		return nil, err
	}
	s := c.slot(p, opts)
	if s == nil {
		r, err := c.runFresh(ctx, p, paths, img, env, argv, stdin, streams{})
		if r != nil {
			r.Fallback = fmt.Sprintf("the backend holds its %d warm containers (Options.MaxWarm), every one in use by a call, so this call got a fresh container of its own", c.maxWarm())
		}
		return r, err
	}
	defer s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if s.id != "" && !c.protectHeld(ctx, s, opts) {
			c.retire(s)
		}
		if s.id == "" {
			if err := c.start(ctx, s, opts); err != nil {
				return nil, err
			}
		}
		var (
			r     *sandbox.Result
			retry bool
		)
		if s.conn() != nil {
			r, err, retry = c.runServer(ctx, p, s, opts.Config.WorkingDir, env, argv, stdin)
		} else {
			r, err, retry = c.runExec(ctx, p, s, opts, env, argv, stdin)
		}
		if retry {
			// The warm container died between calls (the host killed
			// it, say): start a new one, once.
			c.retire(s)
			if attempt == 0 && ctx.Err() == nil {
				continue
			}
		}
		return r, err
	}
}

// warmWrapper runs the command and then kills whatever it left behind.
// kill -1 reaches every process of the sandbox user except init and the
// shell itself.
const warmWrapper = `command -v "$1" >/dev/null 2>&1 || { echo "clawtool-sandbox: $1: command not found" >&2; exit 127; }; "$@"; s=$?; kill -9 -1 2>/dev/null; exit $s`

// runExec runs one call in the slot's container with the engine's exec.
// retry reports that the exec could not be created (the container is
// gone) and nothing ran.
func (c *Backend) runExec(ctx context.Context, p sandbox.Policy, s *warmSlot, opts client.ContainerCreateOptions, env, argv []string, stdin io.Reader) (*sandbox.Result, error, bool) {
	user := opts.Config.User
	l := p.Limits.WithDefaults()
	bg := context.WithoutCancel(ctx)
	start := time.Now()
	execOpts := client.ExecCreateOptions{
		User:         user,
		Env:          env,
		WorkingDir:   opts.Config.WorkingDir,
		Cmd:          append([]string{"/bin/sh", "-c", warmWrapper, "sh"}, argv...),
		AttachStdout: true,
		AttachStderr: true,
		AttachStdin:  stdin != nil,
	}
	ex, err := c.cli.ExecCreate(ctx, s.id, execOpts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: exec in warm container: %w", err), ctx.Err() == nil
	}
	att, err := c.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		c.retire(s)
		return nil, fmt.Errorf("sandbox: exec in warm container: %w", err), false
	}
	k := newCall(l.Output)
	k.pump(att.HijackedResponse, stdin, streams{})
	defer k.finish()
	id := s.id
	kill := k.killer(func() { c.killCall(bg, id, user) })
	stop := context.AfterFunc(ctx, func() { kill(sandbox.TimedOut) })
	defer stop()

	// The stream ends when the command and everything holding its output
	// are gone; the wrapper kills leftovers, so the inspect loop below only
	// runs for a call whose descendants hold the stream after it exited.
	var ins client.ExecInspectResult
	copied, poll := k.copied, 50*time.Millisecond
	for {
		select {
		case <-copied:
			// The exec may still show as running for a moment after its
			// stream ended: look now, then again soon, never in a tight
			// loop.
			copied, poll = nil, 5*time.Millisecond
		case <-time.After(poll):
		}
		ins, err = c.cli.ExecInspect(bg, ex.ID, client.ExecInspectOptions{})
		if err != nil {
			att.Close()
			<-k.copied
			c.retire(s)
			return nil, fmt.Errorf("sandbox: inspect exec: %w", err), false
		}
		if !ins.Running {
			break
		}
	}
	k.drain(att.HijackedResponse, l.WaitDelay)
	oom := false
	if ins.ExitCode == 128+9 && k.killedFor.Load() == nil && c.oomKilled(bg, s.id) {
		// The engine does not flag an OOM kill of an exec; the cgroup's
		// own counter says. The container is retired so that the counter
		// read after the next kill is that call's.
		oom = true
		c.retire(s)
	}
	if ins.ExitCode == 127 && k.killedFor.Load() == nil && strings.HasPrefix(string(k.stderr.Bytes()), "clawtool-sandbox: ") {
		return nil, fmt.Errorf("sandbox: command %q: %w", argv[0], os.ErrNotExist), false
	}
	r := k.result(p, start, ins.ExitCode, oom)
	r.Mode, r.Fallback = sandbox.ModeWarmExec, s.fallback
	return r, nil, false
}

// killCall kills every process of the sandbox user in the warm container
// but its init, which is the call's whole process tree: calls in one warm
// container run one at a time.
func (c *Backend) killCall(ctx context.Context, id, user string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ex, err := c.cli.ExecCreate(ctx, id, client.ExecCreateOptions{User: user, Cmd: []string{"/bin/sh", "-c", "kill -9 -1"}, AttachStdout: true})
	if err != nil {
		return
	}
	att, err := c.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return
	}
	defer att.Close()
	io.Copy(io.Discard, att.Reader)
}

// oomKilled reports whether the memory cgroup of a warm container has
// killed a process for memory, reading its counter (cgroup v2
// memory.events or v1 memory.oom_control) from inside.
func (c *Backend) oomKilled(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ex, err := c.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		Cmd:          []string{"/bin/sh", "-c", "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null"},
		AttachStdout: true,
	})
	if err != nil {
		return false
	}
	att, err := c.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return false
	}
	defer att.Close()
	var out strings.Builder
	stdcopy.StdCopy(&out, io.Discard, io.LimitReader(att.Reader, 64<<10))
	for _, line := range strings.Split(out.String(), "\n") {
		if n, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(n) != "0" {
			return true
		}
	}
	return false
}
