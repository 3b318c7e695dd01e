package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/helper"
	"golang.org/x/sys/unix"
)

func run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	env, _ := p.environ()
	layers := p.layers()
	if err := probeForRun().check(layers); err != nil {
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
	missing := missingProtected(cfg.Workspace, cfg.Protected)
	var lf *leaf
	if cg := hostCgroups(); cg.version != 0 && !slices.Contains(p.Without, LayerCgroup) {
		// The probe found the cgroup usable: failing to make the leaf now
		// fails the run rather than running without it.
		if lf, err = cg.newLeaf(limits); err != nil {
			return nil, fmt.Errorf("sandbox: cgroup: %w", err)
		}
		defer lf.remove()
		layers = append([]Layer{LayerCgroup}, layers...)
		// The leaf bounds the whole run's memory and tasks; the per-process
		// rlimits would only fire first and hide which limit was hit.
		cfg.Data, cfg.NProc = 0, 0
	}
	raw := cfg.Encode()
	if len(raw) > helper.MaxConfig {
		return nil, errors.New("sandbox: the command, environment and paths are too large")
	}

	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer cfgW.Close()
	// A configuration that fits the pipe is written before the helper
	// starts, so the helper never waits for it; a larger one after.
	var werr error
	early := len(raw) <= pipeCapacity
	if early {
		_, werr = cfgW.Write(raw)
		cfgW.Close()
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		return nil, err
	}
	defer errR.Close()

	var (
		killedFor atomic.Value // Outcome the supervisor killed the run for
		cmd       = exec.Command("/proc/self/exe")
	)
	budget := &outputBudget{left: limits.Output}
	stdout, stderr := &capped{b: budget}, &capped{b: budget}
	cmd.Args = []string{"clawtool-sandbox"}
	// The helper is short-lived and single-threaded in what it does: one
	// processor, no collector and no preemption signals (nothing else runs
	// in it) make it start faster. The command gets the policy's
	// environment, not this one.
	cmd.Env = []string{helperEnv + "=1", "GOMAXPROCS=1", "GOGC=off", "GODEBUG=asyncpreemptoff=1"}
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{cfgR, errW}
	var traceR *os.File
	if traceSpawn != nil {
		var traceW *os.File
		if traceR, traceW, err = os.Pipe(); err != nil {
			return nil, err
		}
		defer traceR.Close()
		defer traceW.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, traceW)
	}
	cmd.WaitDelay = limits.WaitDelay
	flags := uintptr(0)
	if slices.Contains(layers, LayerUserNS) {
		flags = namespaceFlags(p.network())
		if !slices.Contains(layers, LayerNetNS) {
			flags &^= syscall.CLONE_NEWNET
		}
	}
	cmd.SysProcAttr = sysProcAttr(flags, sandboxUID(p.UID))

	kill := func(why Outcome) {
		killedFor.CompareAndSwap(nil, why)
		if cmd.Process != nil {
			// The command is init of its PID namespace: killing it kills
			// every process in the namespace. The process group catches the
			// rest when the policy runs without a PID namespace.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Process.Kill()
		}
	}

	start := time.Now()
	t0 := monotonic()
	reaped := func() {}
	if lf != nil {
		reaped, err = lf.start(cmd, cmd.SysProcAttr, hostCgroups())
	} else {
		err = cmd.Start()
	}
	t1 := monotonic()
	cfgR.Close()
	errW.Close()
	if traceR != nil {
		cmd.ExtraFiles[2].Close()
	}
	if err != nil {
		if reaped != nil {
			reaped()
		}
		return nil, fmt.Errorf("sandbox: start helper: %w", err)
	}
	budget.mu.Lock()
	budget.overflow = func() { kill(OutputLimit) }
	budget.mu.Unlock()

	stop := context.AfterFunc(ctx, func() { kill(TimedOut) })
	defer stop()

	if !early {
		_, werr = cfgW.Write(raw)
		cfgW.Close()
	}
	setup, _ := io.ReadAll(io.LimitReader(errR, 4096))
	waitErr := cmd.Wait()
	reaped()
	// Reap anything left in the process group (runs without a PID namespace).
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	elapsed := time.Since(start)
	if traceR != nil {
		stamps, _ := io.ReadAll(traceR)
		trace := []uint64{t0, t1}
		for ; len(stamps) >= 8; stamps = stamps[8:] {
			trace = append(trace, binary.LittleEndian.Uint64(stamps))
		}
		traceSpawn(append(trace, monotonic()))
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
		return nil, fmt.Errorf("sandbox: setting up the sandbox failed: %s", msg)
	}
	if werr != nil && killedFor.Load() == nil {
		return nil, fmt.Errorf("sandbox: send configuration: %w", werr)
	}
	st := cmd.ProcessState
	if st == nil {
		return nil, fmt.Errorf("sandbox: %w", waitErr)
	}
	r := &Result{
		Stdout:    stdout.bytes(),
		Stderr:    stderr.bytes(),
		Truncated: budget.exceeded(),
		Duration:  elapsed,
		CPU:       st.UserTime() + st.SystemTime(),
		Layers:    layers,
		ExitCode:  st.ExitCode(),
		Mode:      ModeNative,
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		r.Signal = ws.Signal().String()
	}
	r.ProtectedCreated = createdProtected(cfg.Workspace, missing)
	var oom, pidsMax bool
	if lf != nil {
		r.Cgroup = "v" + strconv.Itoa(lf.version)
		oom, pidsMax = lf.outcome()
	}
	sig := 0
	if ws.Signaled() {
		sig = int(ws.Signal())
	}
	why, _ := killedFor.Load().(Outcome)
	r.Outcome = classify(why, r.ExitCode, sig, r.CPU, limits.CPU, oom, pidsMax, r.Stderr)
	return r, nil
}

// pipeCapacity is what a pipe holds by default on Linux.
const pipeCapacity = 64 << 10

// helperConfig reduces a run to what the helper has to do.
func helperConfig(p Policy, argv, env []string, layers []Layer, limits Limits) (*helper.Config, error) {
	cfg := &helper.Config{
		Argv:      argv,
		Env:       env,
		Protected: p.protected(),
		HideDirs:  []string{"/run", "/var/run"},
		NoTCP:     p.network() == NetworkNone,
		Tmp:       uint64(limits.Tmp),
		CPU:       uint64((limits.CPU + time.Second - 1) / time.Second),
		FileSize:  uint64(limits.FileSize),
		OpenFiles: uint64(limits.OpenFiles),
		NProc:     uint64(limits.Processes),
		Data:      uint64(limits.Memory),
		Trace:     traceSpawn != nil,
	}
	if p.Workspace != "" {
		cfg.Workspace = filepath.Clean(p.Workspace)
	}
	for _, ro := range p.ReadOnly {
		cfg.ReadOnly = append(cfg.ReadOnly, filepath.Clean(ro))
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		cfg.HideDirs = append(cfg.HideDirs, filepath.Clean(xdg))
	}
	cfg.LandlockRead = append(append(slices.Clone(SystemReadOnly), cfg.ReadOnly...), "/proc", "/dev/random", "/dev/urandom")
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

// traceSpawn, when set (by a benchmark), receives the monotonic clock at
// each step of a run: before and after starting the helper, at each of the
// helper's helper.Stages, and after the run was reaped.
var traceSpawn func(stamps []uint64)

func monotonic() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// missingProtected lists the protected paths absent from the workspace.
func missingProtected(ws string, protected []string) []string {
	if ws == "" {
		return nil
	}
	var out []string
	for _, p := range protected {
		if _, err := os.Lstat(filepath.Join(ws, p)); errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			out = append(out, p)
		}
	}
	return out
}

// createdProtected lists those of missing that exist now.
func createdProtected(ws string, missing []string) []string {
	var out []string
	for _, p := range missing {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			out = append(out, p)
		}
	}
	return out
}
