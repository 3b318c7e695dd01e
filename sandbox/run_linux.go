package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func run(ctx context.Context, p Policy, argv []string, stdin io.Reader) (*Result, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("sandbox: no command")
	}
	if !mainCalled.Load() {
		return nil, ErrNoMain
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
	cfg := helperConfig{
		Argv:       argv,
		Env:        env,
		Workspace:  filepath.Clean(p.Workspace),
		Protected:  p.protected(),
		HideDirs:   []string{"/run", "/var/run"},
		Network:    p.network(),
		DenyUnix:   p.DenyUnixSockets,
		Limits:     p.Limits.withDefaults(),
		Layers:     layers,
		LandlockV6: true,
	}
	if p.Workspace == "" {
		cfg.Workspace = ""
	}
	for _, ro := range p.ReadOnly {
		cfg.ReadOnly = append(cfg.ReadOnly, filepath.Clean(ro))
	}
	if xdg := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(xdg) {
		cfg.HideDirs = append(cfg.HideDirs, filepath.Clean(xdg))
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}

	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer cfgW.Close()
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
	budget := &outputBudget{left: cfg.Limits.Output}
	stdout, stderr := &capped{b: budget}, &capped{b: budget}
	cmd.Args = []string{"clawtool-sandbox"}
	// The helper is short-lived and single-threaded in what it does: fewer
	// runtime threads and no collector make it start faster. The command
	// gets the policy's environment, not this one.
	cmd.Env = []string{helperEnv + "=1", "GOMAXPROCS=1", "GOGC=off"}
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{cfgR, errW}
	cmd.WaitDelay = cfg.Limits.WaitDelay
	flags := uintptr(0)
	if cfg.has(LayerUserNS) {
		flags = namespaceFlags(cfg.Network)
		if !cfg.has(LayerNetNS) {
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
	err = cmd.Start()
	cfgR.Close()
	errW.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: start helper: %w", err)
	}
	budget.mu.Lock()
	budget.overflow = func() { kill(OutputLimit) }
	budget.mu.Unlock()

	stop := context.AfterFunc(ctx, func() { kill(TimedOut) })
	defer stop()

	_, werr := cfgW.Write(raw)
	cfgW.Close()
	setup, _ := io.ReadAll(io.LimitReader(errR, 4096))
	waitErr := cmd.Wait()
	// Reap anything left in the process group (runs without a PID namespace).
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	elapsed := time.Since(start)

	if len(setup) > 0 {
		if errors.Is(ctx.Err(), context.Canceled) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			if killedFor.Load() == TimedOut {
				return nil, fmt.Errorf("sandbox: %w before the command started", ctx.Err())
			}
		}
		msg := string(setup)
		if strings.Contains(msg, errNotFound.Error()) {
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
	}
	ws := st.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		r.Signal = ws.Signal().String()
	}
	switch why, _ := killedFor.Load().(Outcome); {
	case why != "":
		r.Outcome = why
	case ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL) &&
		r.CPU >= cfg.Limits.CPU.Truncate(time.Second)-100*time.Millisecond:
		r.Outcome = CPULimit
	case ws.Signaled():
		r.Outcome = Signaled
	case r.ExitCode != 0:
		r.Outcome = classifyFailure(r.Stderr)
	default:
		r.Outcome = Exited
	}
	return r, nil
}
