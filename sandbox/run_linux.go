package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"github.com/miniopenclaw/tool/sandbox/internal/outcome"
	"github.com/miniopenclaw/tool/sandbox/internal/protected"
	"golang.org/x/sys/unix"
)

func (n *Native) run(ctx context.Context, p Policy, argv []string, stdin io.Reader, out streams) (*Result, error) {
	r, err := n.prepare(ctx, p, argv, stdin, out)
	if err != nil {
		return nil, err
	}
	defer r.release()
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	r.wait(ctx)
	return r.classify(ctx)
}

// A nativeRun is one run of a [Native], carried through its four steps:
// prepare (the policy reduced to the helper's configuration, the cgroup
// leaf, the workspace's descriptor), start (a spare claimed or a helper
// started cold, handed the run), wait (the streams copied, the command
// waited for and reaped) and classify (the Result, the write budget
// applied). What each step holds open is released by release, last first.
type nativeRun struct {
	n      *Native
	p      Policy
	argv   []string
	stdin  io.Reader
	out    streams
	limits Limits
	layers []Layer
	cfg    *helper.Config
	raw    []byte // cfg encoded
	before protected.State
	lf     *leaf // nil without the cgroup layer
	tree   int   // the workspace's detached mount, or -1
	sh     helperShape
	// stdinFile is the caller's stdin when it is a file, handed to the
	// helper at its clone.
	stdinFile *os.File
	undo      []func() // release runs them last first
	// giveBack returns the run's shares of its owner's per-user counts
	// (see shareLedger) once every process of the run has ended; nil
	// without a user namespace.
	giveBack func()

	// start
	h          *helperProc
	spare      bool   // h is a spare
	setupStart []byte // what the helper wrote instead of its acknowledgement
	t0         time.Time
	claim      uint64 // monotonic clock before the claim
	upperFS    int    // the write budget's upper layer, or -1
	proxy      *Proxy

	// wait
	killedFor    atomic.Value // Outcome the supervisor killed the run for
	budget       *outcome.Budget
	stdout       *outcome.Stream
	stderr       *outcome.Stream
	setup        []byte       // a setup error
	exit         *helper.Exit // the record of a helper in fork mode
	forked       bool         // the helper and the leaf are reaped in the background
	ws           syscall.WaitStatus
	cpu          time.Duration
	waitErr      error
	oom, pidsMax bool // the leaf's counters
	elapsed      time.Duration
}

// later adds f to what release runs.
func (r *nativeRun) later(f func()) { r.undo = append(r.undo, f) }

// release runs what the steps deferred, last first.
func (r *nativeRun) release() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i]()
	}
}

// prepare checks the run and reduces it to the helper's configuration and
// shape, making the run's cgroup leaf and opening its workspace. The
// writers of out, when set, take the command's stdout and stderr uncapped
// instead of the Result.
func (n *Native) prepare(ctx context.Context, p Policy, argv []string, stdin io.Reader, out streams) (_ *nativeRun, err error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if !n.pool.hooks.stdinAsIs() {
		var err error
		if stdin, err = stdinForCommand(stdin); err != nil {
			return nil, err
		}
	}
	if prog := n.pool.program; prog != "" && p.Workspace != "" && !n.pool.hooks.helperInWorkspace() && reachesInto(prog, p.Workspace) {
		// The run could replace the program, and the next forker (this
		// program's user, the host's namespaces) would run what it wrote.
		return nil, fmt.Errorf("sandbox: the helper program %s (NativeOptions.Helper) is inside the run's workspace %s, or reached through it, where the run could replace it", prog, p.Workspace)
	}
	if prog := n.pool.program; filepath.IsAbs(prog) && !n.pool.hooks.helperInWorkspace() {
		// Another name of the program's file (a hard link) in a workspace
		// bound directly lets the run change the file itself (its mode,
		// and its contents once no forker runs it); names cannot be
		// told apart from here, so a program with more than one is
		// refused. The run cannot make one (see TestHelperProgramHardLink).
		var st unix.Stat_t
		if err := unix.Stat(prog, &st); err != nil {
			return nil, fmt.Errorf("sandbox: the helper program (NativeOptions.Helper): %w", err)
		}
		if st.Nlink != 1 {
			return nil, fmt.Errorf("sandbox: the helper program %s (NativeOptions.Helper) has %d names (hard links), and a run whose workspace held one could change it; keep it with one name, where no run writes", prog, st.Nlink)
		}
	}
	env, _ := p.environ()
	layers := p.layers()
	if p.network() == NetworkAllow {
		if !slices.Contains(layers, LayerNetNS) || !slices.Contains(layers, LayerMountNS) {
			// Fail closed: without its own network namespace the run
			// would have the host's network, not the proxy alone.
			return nil, errAllowUnsupported("a policy without the network or mount namespace")
		}
		env = ProxyEnv(env)
	}
	report := probeForRun()
	if err := report.check(layers); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &nativeRun{n: n, p: p, argv: argv, stdin: stdin, out: out, tree: -1, upperFS: -1}
	defer func() {
		if err != nil {
			r.release()
		}
	}()
	r.limits = p.Limits.withDefaults()
	cfg, err := helperConfig(p, argv, env, layers, r.limits, n.pool.hooks.tracing())
	if err != nil {
		return nil, err
	}
	r.cfg = cfg
	if cfg.Has(helper.UserNS) {
		// The run's share of its owner's per-user counts, given back once
		// every process of the run has ended: after the helper is reaped,
		// which for a helper in fork mode is in the background.
		got, giveBack, err := n.pool.hooks.shares(&processShares)
		if err != nil {
			return nil, err
		}
		r.giveBack = giveBack
		r.later(func() {
			if !r.forked {
				giveBack()
			}
		})
		cfg.InotifyInstances, cfg.InotifyWatches = got[shareInotifyInstances], got[shareInotifyWatches]
		cfg.SigPending, cfg.MsgQueue = got[shareSigPending], got[shareMsgQueue]
	}
	// Bounded in total over the protected paths: past the bounds the run
	// does not start, as nothing after it could judge them.
	if r.before, err = protected.Snapshot(cfg.Workspace, cfg.Protected, n.pool.hooks.snapshotLimits()); err != nil {
		return nil, fmt.Errorf("sandbox: refusing to run: %w", err)
	}
	if cg := hostCgroups(); cg.version != 0 && !slices.Contains(p.Without, LayerCgroup) {
		// The probe found the cgroup usable: failing to make the leaf now
		// fails the run rather than running without it.
		if r.lf, err = cg.newLeaf(r.limits); err != nil {
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		layers = append([]Layer{LayerCgroup}, layers...)
		// The leaf bounds the whole run's memory and tasks; the per-process
		// rlimits would only fire first and hide which limit was hit.
		cfg.Data, cfg.NProc = 0, 0
	}
	// forked is set when a helper in fork mode reported how its command
	// ended: the helper and the leaf are then reaped in the background.
	r.later(func() {
		if r.lf != nil && !r.forked {
			r.lf.remove()
		}
	})
	// As root, the supervisor opens the workspace itself and hands it to
	// the helper: mapped onto the sandbox user when another user owns it,
	// and reachable below directories the sandbox user cannot search.
	if cfg.Workspace != "" && cfg.Has(helper.MountNS) && os.Geteuid() == 0 && !n.pool.hooks.inHelper() {
		if r.tree, err = workspaceTree(cfg.Workspace, sandboxUID(p.UID)); err != nil {
			return nil, err
		}
		tree := r.tree
		r.later(func() { unix.Close(tree) })
		cfg.WorkspaceTree = true
	}
	// The workspace's write budget: an overlay on a tmpfs of WriteBytes,
	// applied after the run. A streamed run (a long-running server, whose
	// writes cannot wait for its end) binds its workspace directly.
	streamed := out.stdout != nil || out.stderr != nil
	if cfg.Workspace != "" && cfg.Has(helper.MountNS) && !streamed && !slices.Contains(p.Without, LayerWriteBudget) {
		cfg.Budget = uint64(r.limits.WriteBytes)
		layers = append(layers, LayerWriteBudget)
	} else if cfg.Workspace != "" {
		// Bound directly: a protected file's other name would be the
		// protected file, writable.
		if err := protected.HardLinked(cfg.Workspace, cfg.Protected, n.pool.hooks.snapshotLimits()); err != nil {
			return nil, protected.Refusal(err)
		}
	}
	r.layers = layers
	r.raw = cfg.Encode()
	if len(r.raw) > helper.MaxConfig {
		return nil, errors.New("sandbox: the command, environment and paths are too large")
	}
	flags := uintptr(0)
	if slices.Contains(layers, LayerUserNS) {
		flags = namespaceFlags(p.network())
		if !slices.Contains(layers, LayerNetNS) {
			flags &^= syscall.CLONE_NEWNET
		}
	}
	r.stdinFile, _ = stdin.(*os.File)
	r.sh = helperShape{flags: flags, mounts: cfg.Has(helper.MountNS), uid: sandboxUID(p.UID), stdin: stdin != nil && r.stdinFile == nil, trace: n.pool.hooks.tracing()}
	r.sh.fork = r.sh.mounts && report.fork
	return r, nil
}

// start gives the run a helper, handed its configuration: the spare of
// its shape when there is one, otherwise one started for it. It then
// takes the write budget's upper layer from the helper and serves the
// network proxy.
func (r *nativeRun) start(ctx context.Context) (err error) {
	pool := &r.n.pool
	r.t0 = time.Now()
	r.claim = monotonic()
	// A spare serves a run whose shape it has, whose standard input is not
	// a file of the caller's (handed over at the clone) and whose
	// configuration fits the pipe (so that sending it cannot block).
	if r.stdinFile == nil && len(r.raw) <= pipeCapacity {
		r.h, r.setupStart = pool.claimSpare(ctx, r.sh, r.lf, r.raw, r.tree, r.limits.Processes)
		sh := r.sh
		r.later(func() { pool.refill(sh) })
	}
	r.spare = r.h != nil
	if r.h == nil {
		// A cold start: the same hand-over, to a helper started for this
		// run.
		h, err := startHelper(pool, r.sh, r.stdinFile)
		if err != nil {
			return fmt.Errorf("sandbox: start helper: %w", err)
		}
		if r.setupStart, err = handOver(ctx, h, r.lf, r.raw, r.tree, r.limits.Processes); err != nil {
			h.discard()
			if ctx.Err() != nil {
				return fmt.Errorf("sandbox: %w before the command started", ctx.Err())
			}
			return fmt.Errorf("sandbox: start helper: %w", err)
		}
		r.h = h
	}
	h := r.h
	r.later(h.closeAll)
	if r.cfg.Budget != 0 && len(r.setupStart) == 0 {
		// Sent by the helper right after its configuration; a helper that
		// fails first closes its end (budget stays -1, and its setup error
		// follows on its error pipe).
		stopRecv := context.AfterFunc(ctx, h.kill)
		upperFS, err := recvBudget(h)
		stopRecv()
		if err != nil {
			h.kill()
			h.wait()
			return fmt.Errorf("sandbox: workspace write budget: %w", err)
		}
		if upperFS >= 0 {
			r.upperFS = upperFS
			r.later(func() { unix.Close(upperFS) })
		}
	}
	if r.p.network() == NetworkAllow {
		r.proxy = &Proxy{Rules: r.p.Allow, Client: r.argv[0], Log: r.n.networkLog()}
		r.n.pool.hooks.adjustProxy(r.proxy)
		if r.out.proxy != nil {
			r.out.proxy(r.proxy)
		}
		r.proxy.Rules = r.p.Allow // no hook widens the policy's list
		r.later(serveProxy(h, r.proxy))
	}
	return nil
}

// wait copies the command's streams and waits until it has ended: the
// helper's setup error, the record of a helper in fork mode (whose exit
// and leaf are then reaped in the background), or the wait status of the
// helper that became the command. When ctx is done first, or the output
// overflows its cap, the run is killed.
func (r *nativeRun) wait(ctx context.Context) {
	h := r.h
	r.budget = outcome.NewBudget(r.limits.Output)
	r.stdout, r.stderr = r.budget.Stream(), r.budget.Stream()
	var toStdout, toStderr io.Writer = r.stdout, r.stderr
	if r.out.stdout != nil {
		toStdout = r.out.stdout
	}
	if r.out.stderr != nil {
		toStderr = r.out.stderr
	}
	kill := func(why Outcome) {
		r.killedFor.CompareAndSwap(nil, why)
		h.kill()
	}
	r.budget.OnOverflow(func() { kill(OutputLimit) })
	await := h.copyStreams(r.stdin, toStdout, toStderr)

	stop := context.AfterFunc(ctx, func() { kill(TimedOut) })
	r.later(func() { stop() })

	r.setup, r.exit = readSetup(h.errR, r.setupStart)
	if r.exit == nil && r.lf != nil {
		// The helper became the command (or died): its threads are gone,
		// and the leaf's process limit is the command's alone again.
		r.lf.limitProcesses(r.limits.Processes)
	}
	if r.exit != nil {
		// Fork mode: the command and its PID namespace have ended, so the
		// leaf's counters are final; read before the leaf goes with the
		// helper, in the background.
		if r.lf != nil {
			r.oom, r.pidsMax = r.lf.outcome()
		}
		r.forked = true
		r.n.pool.reapForked(h, r.lf, r.giveBack)
		r.ws, r.cpu = syscall.WaitStatus(r.exit.Status), time.Duration(r.exit.User+r.exit.Sys)
		await(r.limits.WaitDelay)
	} else {
		// The helper became the command, or was killed, or failed.
		r.waitErr = h.wait()
		await(r.limits.WaitDelay)
		// Reap anything left in the process group (runs without a PID namespace).
		syscall.Kill(-h.proc.Pid, syscall.SIGKILL)
		if st := h.state; st != nil {
			r.ws, r.cpu = st.Sys().(syscall.WaitStatus), st.UserTime()+st.SystemTime()
		}
	}
	r.elapsed = time.Since(r.t0)
	if h.trace != nil && r.n.pool.hooks.tracing() {
		stamps, _ := io.ReadAll(h.trace)
		tr := spawnTrace{spare: r.spare, forked: r.exit != nil, start: [2]uint64{h.t0, h.t1}, claim: r.claim}
		for ; len(stamps) >= 8; stamps = stamps[8:] {
			tr.helper = append(tr.helper, binary.LittleEndian.Uint64(stamps))
		}
		tr.reaped = monotonic()
		r.n.pool.hooks.trace(tr)
	}
}

// classify turns how the run ended into its Result, or into the error of
// a sandbox that could not be set up, and applies what the run wrote
// through the write budget.
func (r *nativeRun) classify(ctx context.Context) (*Result, error) {
	if len(r.setup) > 0 {
		if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if r.killedFor.Load() == TimedOut {
				return nil, fmt.Errorf("sandbox: %w before the command started", ctx.Err())
			}
		}
		msg := string(r.setup)
		if strings.Contains(msg, errNotFound) {
			return nil, fmt.Errorf("sandbox: %s: %w", msg, os.ErrNotExist)
		}
		if strings.Contains(msg, "workspace write budget") {
			return nil, fmt.Errorf("sandbox: setting up the sandbox failed: %s (refusing to run with the workspace unbounded: the write budget mounts the workspace as an overlay, which this kernel or workspace does not allow; a policy may name %q in Without to bind the workspace directly, bounded per file only)", msg, LayerWriteBudget)
		}
		return nil, fmt.Errorf("sandbox: setting up the sandbox failed: %s", msg)
	}
	if r.exit == nil && r.h.state == nil {
		return nil, fmt.Errorf("sandbox: %w", r.waitErr)
	}
	ws, limits, cfg := r.ws, r.limits, r.cfg
	res := &Result{
		Stdout:    r.stdout.Bytes(),
		Stderr:    r.stderr.Bytes(),
		Truncated: r.budget.Exceeded(),
		Duration:  r.elapsed,
		CPU:       r.cpu,
		Layers:    r.layers,
		ExitCode:  ws.ExitStatus(),
		Mode:      ModeNative,
	}
	if ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	if r.proxy != nil {
		res.NetworkDenials, res.NetworkDenialsDropped = r.proxy.Denials()
	}
	oom, pidsMax := r.oom, r.pidsMax
	if r.lf != nil {
		res.Cgroup = "v" + strconv.Itoa(r.lf.version)
		if !r.forked {
			oom, pidsMax = r.lf.outcome()
		}
	}
	sig := 0
	if ws.Signaled() {
		sig = int(ws.Signal())
	}
	why, _ := r.killedFor.Load().(Outcome)
	res.Outcome = classify(why, res.ExitCode, sig, res.CPU, limits.CPU, oom, pidsMax, res.Stderr)
	var refusedProtected []string
	if r.upperFS >= 0 {
		if res.Outcome == Exited && res.ExitCode != 0 && budgetSpent(r.upperFS) {
			// The budget stopped the run: what it wrote is dropped, so
			// that failing at the budget puts nothing on the host's disk.
			res.Outcome = WriteLimit
			res.NotApplied = []string{fmt.Sprintf(".: the run failed after it used up its workspace write budget of %d bytes: nothing it changed in the workspace was applied", limits.WriteBytes)}
		} else {
			// Applied whatever else the outcome: a run that failed, timed
			// out or was killed leaves what it wrote, as a direct write
			// would.
			applied, err := applyBudget(r.upperFS, cfg.Workspace, cfg.Protected, limits.WriteBytes)
			if err != nil {
				res.NotApplied = append(res.NotApplied, ".: "+err.Error())
			}
			refusedProtected = applied.protected
			res.NotApplied = append(res.NotApplied, applied.list()...)
		}
	}
	res.ProtectedChanged = r.before.Changed(cfg.Workspace, cfg.Protected)
	for _, q := range refusedProtected {
		if !slices.Contains(res.ProtectedChanged, q) {
			res.ProtectedChanged = append(res.ProtectedChanged, q)
		}
	}
	if res.Outcome == Exited && res.ExitCode != 0 && r.exit != nil && writeBudgetSpent(*r.exit) {
		res.Outcome = WriteLimit
	}
	return res, nil
}

// readSetup reads what the helper writes to its error pipe once it has the
// configuration, after start (what a spare wrote instead of its
// acknowledgement): nothing when the helper became the command; a setup
// error, up to 4 KiB; or, from a helper in fork mode, the record of how
// its command ended, taken as soon as it is whole (the helper's exit is
// not waited for). A record cut short, by the helper's death, counts as
// nothing: the helper's own wait status then says what happened.
func readSetup(r io.Reader, start []byte) (setup []byte, exit *helper.Exit) {
	first := start
	if len(first) == 0 {
		var b [helper.ExitSize]byte
		n, _ := io.ReadAtLeast(r, b[:], 1)
		first = b[:n]
	}
	if len(first) > 0 && first[0] == helper.Exited {
		rec := make([]byte, helper.ExitSize)
		n := copy(rec, first)
		if _, err := io.ReadFull(r, rec[n:]); err != nil {
			return nil, nil
		}
		e, ok := helper.DecodeExit(rec)
		if !ok {
			return nil, nil
		}
		return nil, &e
	}
	rest, _ := io.ReadAll(io.LimitReader(r, 4096))
	return append(first, rest...), nil
}

// pipeCapacity is what a pipe holds by default on Linux.
const pipeCapacity = 64 << 10

// helperConfig reduces a run to what the helper has to do.
func helperConfig(p Policy, argv, env []string, layers []Layer, limits Limits, trace bool) (*helper.Config, error) {
	cfg := &helper.Config{
		Argv:      argv,
		Env:       env,
		Protected: p.protected(),
		NoTCP:     p.network() == NetworkNone,
		Tmp:       uint64(min(limits.Tmp, limits.WriteBytes)),
		CPU:       uint64((limits.CPU + time.Second - 1) / time.Second),
		FileSize:  uint64(limits.FileSize),
		OpenFiles: uint64(limits.OpenFiles),
		NProc:     uint64(limits.Processes),
		Data:      uint64(limits.Memory),
		Trace:     trace,
	}
	if p.network() == NetworkAllow {
		cfg.ProxyPort = ProxyPort
	}
	if p.Workspace != "" {
		cfg.Workspace = filepath.Clean(p.Workspace)
		own, err := protected.Git(cfg.Workspace, cfg.Protected)
		if err != nil {
			return nil, protected.Refusal(err)
		}
		nested, err := protected.Nested(cfg.Workspace, own, protected.Bounds{Entries: limits.GitSearch, Depth: GitSearchDepth})
		if err != nil {
			return nil, protected.Refusal(err)
		}
		cfg.Protected = nested
	}
	for _, ro := range p.ReadOnly {
		cfg.ReadOnly = append(cfg.ReadOnly, filepath.Clean(ro))
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		cfg.HideDirs = append(cfg.HideDirs, filepath.Clean(xdg))
	}
	cfg.LandlockRead = append(append(slices.Clone(systemReadOnly), cfg.ReadOnly...), "/proc", "/dev/random", "/dev/urandom")
	bits := map[Layer]uint64{
		LayerUserNS: helper.UserNS, LayerMountNS: helper.MountNS, LayerUTSNS: helper.UTSNS,
		LayerLandlock: helper.Landlock, LayerSeccomp: helper.Seccomp, LayerRlimits: helper.Rlimits,
	}
	for _, l := range layers {
		cfg.Layers |= bits[l]
	}
	if cfg.Has(helper.Seccomp) {
		prog, err := seccompProgram(p.DenyUnixSockets, p.network())
		if err != nil {
			return nil, fmt.Errorf("sandbox: assemble the seccomp filter: %w", err)
		}
		cfg.Seccomp = prog
	}
	return cfg, nil
}

// nativeHooks are what a test or a benchmark sets on a [Native] (see
// export_linux_test.go); a Native a program makes has none (nil), and
// every method is then a no-op.
type nativeHooks struct {
	// trace receives the monotonic clock at each step of each run; its
	// helpers write their timestamps to a trace pipe, so tracing is part
	// of a spare's shape.
	trace func(spawnTrace)
	// spareWaiting is called, under the pool's lock, with the process id
	// of each spare that starts waiting for a run.
	spareWaiting func(pid int)
	// eager makes every claim start the shape's next spare at once,
	// as a run that comes faster than spares start does, so that the next
	// spare's namespaces are made while the run's are alive.
	eager bool
	// workspaceInHelper makes the helper look the workspace up itself as
	// the sandbox user, as it did before the supervisor opened it (no
	// idmapping, no way past unsearchable directories); read at each run.
	workspaceInHelper bool
	// proxy adjusts a NetworkAllow run's proxy (its resolver and dialer)
	// before it serves.
	proxy func(*Proxy)
	// directStart makes a backend start every helper itself, without the
	// forker, as every backend did before it had one: what the
	// benchmarks compare the forker with.
	directStart bool
	// anyStdinFile hands the command whatever *os.File is its standard
	// input, as runs did before stdinForCommand (a test's control).
	anyStdinFile bool
	// allowHelperInWorkspace lets a run's workspace hold the backend's
	// helper program, or another name of its file (a hard link), as
	// before runs refused it (a test's control).
	allowHelperInWorkspace bool
	// snapshot bounds the look at the protected paths before and after
	// each run (zero: the defaults), so that a test need not make 131,072
	// entries to pass them.
	snapshot protected.Limits
	// ledger, when set, replaces the process's ledger of shares (a test's
	// own, so that other tests' runs hold none of it); userCounts, when
	// set, skips the ledger and gives every run what it says, as
	// the backend did before it had one (a test's control).
	ledger     *shareLedger
	userCounts func() userShares
}

// shares takes a run's shares of its owner's per-user counts from l,
// unless the hooks say otherwise.
func (k *nativeHooks) shares(l *shareLedger) (userShares, func(), error) {
	if k != nil && k.userCounts != nil {
		return k.userCounts(), func() {}, nil
	}
	if k != nil && k.ledger != nil {
		l = k.ledger
	}
	return l.take()
}

func (k *nativeHooks) noForker() bool { return k != nil && k.directStart }

func (k *nativeHooks) stdinAsIs() bool { return k != nil && k.anyStdinFile }

func (k *nativeHooks) helperInWorkspace() bool { return k != nil && k.allowHelperInWorkspace }

func (k *nativeHooks) snapshotLimits() protected.Limits {
	if k == nil {
		return protected.Limits{}
	}
	return k.snapshot
}

func (k *nativeHooks) tracing() bool { return k != nil && k.trace != nil }

func (k *nativeHooks) refillEagerly() bool { return k != nil && k.eager }

func (k *nativeHooks) spareStarted(pid int) {
	if k != nil && k.spareWaiting != nil {
		k.spareWaiting(pid)
	}
}

func (k *nativeHooks) inHelper() bool { return k != nil && k.workspaceInHelper }

func (k *nativeHooks) adjustProxy(p *Proxy) {
	if k != nil && k.proxy != nil {
		k.proxy(p)
	}
}

// A spawnTrace holds the monotonic clock at each step of a run.
type spawnTrace struct {
	spare  bool      // the run claimed a spare
	forked bool      // its helper started the command in fork mode
	start  [2]uint64 // before and after the helper's clone and exec
	// claim is when the run began; for a spare, long after start.
	claim  uint64
	helper []uint64 // at each of the helper's helper.Stages
	reaped uint64   // after the run was reaped
}

func monotonic() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// writeBudgetSpent reports whether a run's private /tmp, as its helper
// found it after the command ended, had less than a sixteenth of its size
// or no inode left: a write would have failed (ENOSPC). A sixteenth,
// because a large write or fallocate fails whole and leaves the rest free.
func writeBudgetSpent(e helper.Exit) bool {
	return e.TmpSize > 0 && (e.TmpFree < e.TmpSize/16 || e.TmpInodes == 0)
}

// stdinForCommand returns the standard input to give a run's command for
// the caller's stdin. An *os.File is handed to the command as it is, its
// open file description shared, so the command can do with it whatever
// its mode allows: write to it, and ioctl it. Only a pipe or a regular
// file open read-only is handed over; a regular file open for writing is
// read by the supervisor and copied in, as any other reader is, and
// /dev/null is taken for an empty input. Anything else (a terminal, a
// socket, another device, a pipe open for writing) is refused: a command
// given the caller's terminal wrote escape sequences to it past
// Result.Text's escaping and turned its echo off (TestStdinFileHandOver),
// and copying from it would leave the supervisor blocked in a read of the
// user's next line after the run. A file whose kind or mode cannot be
// read is refused too.
func stdinForCommand(stdin io.Reader) (io.Reader, error) {
	f, ok := stdin.(*os.File)
	if !ok {
		return stdin, nil
	}
	if f == nil {
		return nil, nil
	}
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("sandbox: standard input %s: %w", f.Name(), err)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: standard input %s: %w", f.Name(), err)
	}
	readOnly := fl&unix.O_ACCMODE == unix.O_RDONLY
	switch typ := st.Mode & unix.S_IFMT; {
	case (typ == unix.S_IFIFO || typ == unix.S_IFREG) && readOnly:
		return f, nil
	case typ == unix.S_IFREG:
		return struct{ io.Reader }{f}, nil // copied: the command gets a pipe
	case typ == unix.S_IFCHR && st.Rdev == unix.Mkdev(1, 3):
		return nil, nil // /dev/null: an empty input
	}
	what := "a file of another kind"
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		what = "a device"
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			what = "a terminal"
		}
	case unix.S_IFSOCK:
		what = "a socket"
	case unix.S_IFIFO:
		what = "a pipe open for writing"
	}
	return nil, fmt.Errorf("sandbox: standard input %s is %s, which the command would share (write to it, or change it with ioctls); pass a pipe or a file open read-only, or a reader that is not an *os.File", f.Name(), what)
}
