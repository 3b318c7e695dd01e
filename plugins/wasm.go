package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/internal/boundedfile"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/wasm"
)

// Bounds of WebAssembly modules.
const (
	// DefaultModuleTimeout is the deadline of one call to a module's tool
	// when the configuration sets none.
	DefaultModuleTimeout = 10 * time.Second
	// DefaultModulePages is a module's memory limit when the
	// configuration sets none: 256 pages of 64 KiB, 16 MiB.
	DefaultModulePages = 256
	// maxModuleBytes bounds a .wasm file.
	maxModuleBytes = 64 << 20
	// maxStderrQuoted bounds the standard error quoted in a failed call.
	maxStderrQuoted = 2 << 10
)

// moduleSecretRefs refuses a module whose env expanded a reference to a
// secret-named variable of the host's environment (refs): a module's
// environment takes no secret, and renamed ("DB": "${DB_PASSWORD}") its
// opaque value is not told from any other.
func moduleSecretRefs(refs []secretRef) error {
	if len(refs) > 0 {
		r := refs[0]
		return fmt.Errorf(`%s expands ${%s}, a variable of this environment whose name looks like a secret (it contains %s): a WebAssembly module's environment takes no secret`, r.where, r.name, sandbox.SecretWord(r.name))
	}
	return nil
}

// startModule compiles the module and registers its tools.
func (e *entry) startModule(ctx context.Context, m Module, policy *sandbox.Policy) error {
	if m.MemoryPages == 0 {
		m.MemoryPages = DefaultModulePages
	}
	timeout := time.Duration(m.Timeout)
	if timeout == 0 {
		timeout = DefaultModuleTimeout
	}
	output := e.defaults.MaxOutput
	readOnly, err := modulePolicy(policy, &m, &output, &timeout)
	if err != nil {
		return err
	}
	bin, err := boundedfile.Read(m.Path, maxModuleBytes)
	if err != nil {
		return err
	}
	rt, err := wasm.NewRuntime(ctx, wasm.Options{MemoryPages: m.MemoryPages, CacheDir: e.h.cacheDir})
	if err != nil {
		return err
	}
	e.onClose(func() { rt.Close(context.Background()) })
	mod, err := rt.Compile(ctx, bin)
	if err != nil {
		return err
	}
	env := make([]string, 0, len(m.Env))
	for _, k := range sortedKeys(m.Env) {
		env = append(env, k+"="+m.Env[k])
	}
	if err := (sandbox.Policy{Env: env}).Validate(); err != nil {
		return err
	}
	abi, err := moduleABI(m.ABI, mod.Exports())
	if err != nil {
		return err
	}
	cfg := wasm.Config{Env: env, Workspace: m.Workspace, ReadOnly: readOnly, Output: output}
	var pool *reactor
	if abi == ABIReactor {
		cfg.Args = []string{e.name}
		pool = newReactor(mod, cfg, max(m.Instances, 1), m.MemoryPages)
		e.onClose(pool.close)
		// One instance now: the module's start-up is paid at load, and a
		// module that fails to start fails here.
		if err := pool.warm(ctx); err != nil {
			return err
		}
	}
	for _, spec := range m.Tools {
		params := spec.InputSchema
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		t := &moduleTool{
			name: m.Prefix + spec.Name, remote: spec.Name, module: e.name, description: spec.Description,
			params: params, mod: mod, cfg: cfg, reactor: pool, timeout: timeout,
			opts: tool.Options{ForeignSchema: true, Annotations: tool.Annotations{
				ReadOnly: spec.ReadOnly, Destructive: spec.Destructive, Idempotent: spec.Idempotent, OpenWorld: spec.OpenWorld,
			}},
		}
		e.put(t.name, t)
	}
	return nil
}

// The exports of the reactor ABI.
const (
	exportAlloc = "clawtool_alloc"
	exportCall  = "clawtool_call"
)

// moduleABI checks the module's exports against the ABI asked for, or
// picks the ABI from them when none is.
func moduleABI(abi string, exports []string) (string, error) {
	has := func(name string) bool { return slices.Contains(exports, name) }
	reactor := has(exportAlloc) && has(exportCall)
	switch {
	case abi == "" && reactor, abi == ABIReactor && reactor:
		return ABIReactor, nil
	case abi == ABIReactor:
		return "", fmt.Errorf(`"abi": %q, but the module does not export both %s and %s`, ABIReactor, exportAlloc, exportCall)
	case has("_start"):
		return ABICommand, nil
	case abi == ABICommand:
		return "", fmt.Errorf(`"abi": %q, but the module does not export _start (a reactor, built with -buildmode=c-shared, exports %s and %s)`, ABICommand, exportAlloc, exportCall)
	}
	return "", fmt.Errorf("the module exports neither _start (a WASI command) nor %s and %s (a reactor)", exportAlloc, exportCall)
}

func copyN(h hash.Hash, f *os.File, n int64) (int64, error) {
	return io.Copy(h, io.LimitReader(f, n))
}

// A moduleTool is one tool of a WebAssembly module.
type moduleTool struct {
	name, remote, module, description string
	params                            json.RawMessage
	opts                              tool.Options
	mod                               *wasm.Module
	cfg                               wasm.Config // Args, Stdin set per call
	reactor                           *reactor    // nil for a command module
	timeout                           time.Duration
}

func (t *moduleTool) Name() string                { return t.name }
func (t *moduleTool) Description() string         { return t.description }
func (t *moduleTool) Parameters() json.RawMessage { return t.params }
func (t *moduleTool) Options() tool.Options       { return t.opts }

// errModuleDeadline is the cause of a module run stopped at its deadline.
var errModuleDeadline = errors.New("module deadline")

// Execute calls the tool under the module's limits: through the warm
// instance of a reactor, or by running a command module as
// "MODULE TOOL" with the arguments on its standard input.
func (t *moduleTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	rctx, cancel := context.WithTimeoutCause(ctx, t.timeout, errModuleDeadline)
	defer cancel()
	if t.reactor != nil {
		return t.callReactor(ctx, rctx, args)
	}
	c := t.cfg
	c.Args = []string{t.module, t.remote}
	c.Stdin = bytes.NewReader(args)
	res, err := t.mod.Run(rctx, c)
	if err != nil {
		return tool.Result{}, fmt.Errorf("module %q: %w", t.module, err)
	}
	switch res.Outcome {
	case sandbox.TimedOut:
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return t.fail(tool.KindTimeout, "stopped at its deadline of %s", t.timeout)
	case sandbox.OutputLimit:
		return t.fail(tool.KindToolError, "stopped: it wrote more output than the limit allows")
	case sandbox.MemoryLimit:
		return t.fail(tool.KindToolError, "ran out of memory at its limit")
	case sandbox.Signaled:
		return t.fail(tool.KindToolError, "trapped: %s", res.Signal)
	}
	if res.ExitCode != 0 {
		msg := quoteStderr(res.Stderr)
		if msg == "" {
			msg = fmt.Sprintf("exited with status %d", res.ExitCode)
		}
		return t.fail(tool.KindToolError, "%s", msg)
	}
	return tool.Result{Output: string(res.Stdout)}, nil
}

// fail is an error Result naming the module and the tool.
func (t *moduleTool) fail(kind tool.ErrorKind, format string, a ...any) (tool.Result, error) {
	msg := fmt.Sprintf("module %q, tool %q: ", t.module, t.remote) + fmt.Sprintf(format, a...)
	return tool.Result{IsError: true, Kind: kind, Error: msg}, nil
}

// quoteStderr is the end of a module's standard error, for a message.
func quoteStderr(b []byte) string {
	msg := strings.TrimSpace(string(b))
	if len(msg) > maxStderrQuoted {
		msg = "…" + msg[len(msg)-maxStderrQuoted:]
	}
	return msg
}
