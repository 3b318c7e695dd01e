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
	"golang.org/x/sys/unix"
)

func run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error) {
	return runSandbox(ctx, p, argv, stdin, true, streams{})
}

func runStreams(ctx context.Context, p Policy, argv []string, stdin io.Reader, out streams) (*Result, error) {
	return runSandbox(ctx, p, argv, stdin, true, out)
}

// runSandbox is run; useSpares false starts the helper cold even when
// spares are on (the benchmarks compare both in one process). The writers
// of out, when set, take the command's stdout and stderr uncapped instead
// of the Result.
func runSandbox(ctx context.Context, p Policy, argv []string, stdin io.Reader, useSpares bool, out streams) (*Result, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	env, _ := p.environ()
	layers := p.layers()
	if p.network() == NetworkAllow {
		if !slices.Contains(layers, LayerNetNS) || !slices.Contains(layers, LayerMountNS) {
			// Fail closed: without its own network namespace the run
			// would have the host's network, not the proxy alone.
			return nil, errAllowUnsupported("a policy without the network or mount namespace")
		}
		env = proxyEnv(env)
	}
	report := probeForRun()
	if err := report.check(layers); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limits := p.Limits.withDefaults()
	cfg, err := helperConfig(p, argv, env, layers, limits)
	if err != nil {
		return nil, err
	}
	before := snapshotProtected(cfg.Workspace, cfg.Protected)
	var lf *leaf
	if cg := hostCgroups(); cg.version != 0 && !slices.Contains(p.Without, LayerCgroup) {
		// The probe found the cgroup usable: failing to make the leaf now
		// fails the run rather than running without it.
		if lf, err = cg.newLeaf(limits); err != nil {
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		layers = append([]Layer{LayerCgroup}, layers...)
		// The leaf bounds the whole run's memory and tasks; the per-process
		// rlimits would only fire first and hide which limit was hit.
		cfg.Data, cfg.NProc = 0, 0
	}
	// As root, the supervisor opens the workspace itself and hands it to
	// the helper: mapped onto the sandbox user when another user owns it,
	// and reachable below directories the sandbox user cannot search.
	tree := -1
	if cfg.Workspace != "" && cfg.Has(helper.MountNS) && os.Geteuid() == 0 && !workspaceInHelper {
		if tree, err = workspaceTree(cfg.Workspace, sandboxUID(p.UID)); err != nil {
			return nil, err
		}
		defer unix.Close(tree)
		cfg.WorkspaceTree = true
	}
	// The workspace's write budget: an overlay on a tmpfs of WriteBytes,
	// applied after the run. A streamed run (a long-running server, whose
	// writes cannot wait for its end) binds its workspace directly.
	streamed := out.stdout != nil || out.stderr != nil
	if cfg.Workspace != "" && cfg.Has(helper.MountNS) && !streamed && !slices.Contains(p.Without, LayerWriteBudget) {
		cfg.Budget = uint64(limits.WriteBytes)
		layers = append(layers, LayerWriteBudget)
	}
	raw := cfg.Encode()
	if len(raw) > helper.MaxConfig {
		return nil, errors.New("sandbox: the command, environment and paths are too large")
	}
	flags := uintptr(0)
	if slices.Contains(layers, LayerUserNS) {
		flags = namespaceFlags(p.network())
		if !slices.Contains(layers, LayerNetNS) {
			flags &^= syscall.CLONE_NEWNET
		}
	}
	stdinFile, _ := stdin.(*os.File)
	sh := helperShape{flags: flags, mounts: cfg.Has(helper.MountNS), uid: sandboxUID(p.UID), stdin: stdin != nil && stdinFile == nil, trace: traceSpawn != nil}
	sh.fork = sh.mounts && report.fork
	// forked is set when a helper in fork mode reported how its command
	// ended: the helper and the leaf are then reaped in the background.
	forked := false
	defer func() {
		if lf != nil && !forked {
			lf.remove()
		}
	}()

	var (
		killedFor atomic.Value // Outcome the supervisor killed the run for
		h         *helperProc
	)
	start := time.Now()
	claim := monotonic()
	// A spare serves a run whose shape it has, whose standard input is not
	// a file of the caller's (handed over at the clone) and whose
	// configuration fits the pipe (so that sending it cannot block).
	var setupStart []byte
	if useSpares && stdinFile == nil && len(raw) <= pipeCapacity {
		h, setupStart = claimSpare(ctx, sh, lf, raw, tree, limits.Processes)
		defer spares.refill(sh)
	}
	spare := h != nil
	if h == nil {
		// A cold start: the same hand-over, to a helper started for this
		// run.
		if h, err = startHelper(sh, stdinFile); err != nil {
			return nil, fmt.Errorf("sandbox: start helper: %w", err)
		}
		if setupStart, err = handOver(ctx, h, lf, raw, tree, limits.Processes); err != nil {
			h.discard()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("sandbox: %w before the command started", ctx.Err())
			}
			return nil, fmt.Errorf("sandbox: start helper: %w", err)
		}
	}
	defer h.closeAll()
	upperFS := -1
	if cfg.Budget != 0 && len(setupStart) == 0 {
		// Sent by the helper right after its configuration; a helper that
		// fails first closes its end (budget stays -1, and its setup error
		// follows on its error pipe).
		stopRecv := context.AfterFunc(ctx, h.kill)
		upperFS, err = recvBudget(h)
		stopRecv()
		if err != nil {
			h.kill()
			h.cmd.Wait()
			return nil, fmt.Errorf("sandbox: workspace write budget: %w", err)
		}
		if upperFS >= 0 {
			defer unix.Close(upperFS)
		}
	}
	var proxy *Proxy
	if p.network() == NetworkAllow {
		proxy = &Proxy{Rules: p.Allow, Client: argv[0], Log: networkLog()}
		if p.proxyHook != nil {
			p.proxyHook(proxy)
			proxy.Rules = p.Allow // a hook never widens the policy's list
		}
		stopProxy := serveProxy(h, proxy)
		defer stopProxy()
	}
	cmd := h.cmd
	budget := outcome.NewBudget(limits.Output)
	stdout, stderr := budget.Stream(), budget.Stream()
	var toStdout, toStderr io.Writer = stdout, stderr
	if out.stdout != nil {
		toStdout = out.stdout
	}
	if out.stderr != nil {
		toStderr = out.stderr
	}
	kill := func(why Outcome) {
		killedFor.CompareAndSwap(nil, why)
		h.kill()
	}
	budget.OnOverflow(func() { kill(OutputLimit) })
	await := h.copyStreams(stdin, toStdout, toStderr)

	stop := context.AfterFunc(ctx, func() { kill(TimedOut) })
	defer stop()

	setup, exit := readSetup(h.errR, setupStart)
	if exit == nil && lf != nil {
		// The helper became the command (or died): its threads are gone,
		// and the leaf's process limit is the command's alone again.
		lf.limitProcesses(limits.Processes)
	}
	var (
		ws           syscall.WaitStatus
		cpu          time.Duration
		waitErr      error
		oom, pidsMax bool // the leaf's counters
	)
	if exit != nil {
		// Fork mode: the command and its PID namespace have ended, so the
		// leaf's counters are final; read before the leaf goes with the
		// helper, in the background.
		if lf != nil {
			oom, pidsMax = lf.outcome()
		}
		forked = true
		reapForked(h, lf)
		ws, cpu = syscall.WaitStatus(exit.Status), time.Duration(exit.User+exit.Sys)
		await(limits.WaitDelay)
	} else {
		// The helper became the command, or was killed, or failed.
		waitErr = cmd.Wait()
		await(limits.WaitDelay)
		// Reap anything left in the process group (runs without a PID namespace).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if st := cmd.ProcessState; st != nil {
			ws, cpu = st.Sys().(syscall.WaitStatus), st.UserTime()+st.SystemTime()
		}
	}
	elapsed := time.Since(start)
	if h.trace != nil && traceSpawn != nil {
		stamps, _ := io.ReadAll(h.trace)
		tr := spawnTrace{spare: spare, forked: exit != nil, start: [2]uint64{h.t0, h.t1}, claim: claim}
		for ; len(stamps) >= 8; stamps = stamps[8:] {
			tr.helper = append(tr.helper, binary.LittleEndian.Uint64(stamps))
		}
		tr.reaped = monotonic()
		traceSpawn(tr)
	}

	if len(setup) > 0 {
		if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if killedFor.Load() == TimedOut {
				return nil, fmt.Errorf("sandbox: %w before the command started", ctx.Err())
			}
		}
		msg := string(setup)
		if strings.Contains(msg, errNotFound) {
			return nil, fmt.Errorf("sandbox: %s: %w", msg, os.ErrNotExist)
		}
		if strings.Contains(msg, "workspace write budget") {
			return nil, fmt.Errorf("sandbox: setting up the sandbox failed: %s (refusing to run with the workspace unbounded: the write budget mounts the workspace as an overlay, which this kernel or workspace does not allow; a policy may name %q in Without to bind the workspace directly, bounded per file only)", msg, LayerWriteBudget)
		}
		return nil, fmt.Errorf("sandbox: setting up the sandbox failed: %s", msg)
	}
	if exit == nil && cmd.ProcessState == nil {
		return nil, fmt.Errorf("sandbox: %w", waitErr)
	}
	r := &Result{
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: budget.Exceeded(),
		Duration:  elapsed,
		CPU:       cpu,
		Layers:    layers,
		ExitCode:  ws.ExitStatus(),
		Mode:      ModeNative,
	}
	if ws.Signaled() {
		r.Signal = ws.Signal().String()
	}
	if proxy != nil {
		r.NetworkDenials, r.NetworkDenialsDropped = proxy.Denials()
	}
	if lf != nil {
		r.Cgroup = "v" + strconv.Itoa(lf.version)
		if !forked {
			oom, pidsMax = lf.outcome()
		}
	}
	sig := 0
	if ws.Signaled() {
		sig = int(ws.Signal())
	}
	why, _ := killedFor.Load().(Outcome)
	r.Outcome = classify(why, r.ExitCode, sig, r.CPU, limits.CPU, oom, pidsMax, r.Stderr)
	var refusedProtected []string
	if upperFS >= 0 {
		if r.Outcome == Exited && r.ExitCode != 0 && budgetSpent(upperFS) {
			// The budget stopped the run: what it wrote is dropped, so
			// that failing at the budget puts nothing on the host's disk.
			r.Outcome = WriteLimit
			r.NotApplied = []string{fmt.Sprintf(".: the run failed after it used up its workspace write budget of %d bytes: nothing it changed in the workspace was applied", limits.WriteBytes)}
		} else {
			// Applied whatever else the outcome: a run that failed, timed
			// out or was killed leaves what it wrote, as a direct write
			// would.
			res, err := applyBudget(upperFS, cfg.Workspace, cfg.Protected, limits.WriteBytes)
			if err != nil {
				r.NotApplied = append(r.NotApplied, ".: "+err.Error())
			}
			refusedProtected = res.protected
			r.NotApplied = append(r.NotApplied, res.notApplied...)
		}
	}
	r.ProtectedChanged = before.changed(cfg.Workspace, cfg.Protected)
	for _, q := range refusedProtected {
		if !slices.Contains(r.ProtectedChanged, q) {
			r.ProtectedChanged = append(r.ProtectedChanged, q)
		}
	}
	if r.Outcome == Exited && r.ExitCode != 0 && exit != nil && writeBudgetSpent(*exit) {
		r.Outcome = WriteLimit
	}
	return r, nil
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
func helperConfig(p Policy, argv, env []string, layers []Layer, limits Limits) (*helper.Config, error) {
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
		Trace:     traceSpawn != nil,
	}
	if p.network() == NetworkAllow {
		cfg.ProxyPort = ProxyPort
	}
	if p.Workspace != "" {
		cfg.Workspace = filepath.Clean(p.Workspace)
		cfg.Protected = gitProtected(cfg.Workspace, cfg.Protected)
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

// workspaceInHelper, set by a benchmark, makes the helper look the
// workspace up itself as the sandbox user, as it did before the supervisor
// opened it (no idmapping, no way past unsearchable directories).
var workspaceInHelper bool

// traceSpawn, when set (by a benchmark), receives the monotonic clock at
// each step of a run.
var traceSpawn func(spawnTrace)

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
