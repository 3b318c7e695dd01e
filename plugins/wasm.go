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
	"strings"
	"time"

	"github.com/miniopenclaw/tool"
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

// startModule compiles the module and registers its tools.
func (e *entry) startModule(ctx context.Context, m Module) error {
	bin, err := readBounded(m.Path, maxModuleBytes)
	if err != nil {
		return err
	}
	pages := m.MemoryPages
	if pages == 0 {
		pages = DefaultModulePages
	}
	rt, err := wasm.NewRuntime(ctx, wasm.Options{MemoryPages: pages, CacheDir: e.h.cacheDir})
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
	timeout := time.Duration(m.Timeout)
	if timeout == 0 {
		timeout = DefaultModuleTimeout
	}
	for _, spec := range m.Tools {
		params := spec.InputSchema
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		t := &moduleTool{
			name: m.Prefix + spec.Name, remote: spec.Name, module: e.name, description: spec.Description,
			params: params, mod: mod, env: env, workspace: m.Workspace, timeout: timeout,
			output: e.defaults.MaxOutput,
			opts: tool.Options{ForeignSchema: true, Annotations: tool.Annotations{
				ReadOnly: spec.ReadOnly, Destructive: spec.Destructive, Idempotent: spec.Idempotent, OpenWorld: spec.OpenWorld,
			}},
		}
		e.put(t.name, t)
	}
	return nil
}

func readBounded(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	return b, nil
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
	env                               []string
	workspace                         string
	timeout                           time.Duration
	output                            int
}

func (t *moduleTool) Name() string                { return t.name }
func (t *moduleTool) Description() string         { return t.description }
func (t *moduleTool) Parameters() json.RawMessage { return t.params }
func (t *moduleTool) Options() tool.Options       { return t.opts }

// errModuleDeadline is the cause of a module run stopped at its deadline.
var errModuleDeadline = errors.New("module deadline")

// Execute runs the module as "MODULE TOOL" with the arguments on its
// standard input, under the module's limits.
func (t *moduleTool) Execute(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	rctx, cancel := context.WithTimeoutCause(ctx, t.timeout, errModuleDeadline)
	defer cancel()
	res, err := t.mod.Run(rctx, wasm.Config{
		Args:      []string{t.module, t.remote},
		Env:       t.env,
		Workspace: t.workspace,
		Stdin:     bytes.NewReader(args),
		Output:    t.output,
	})
	if err != nil {
		return tool.Result{}, fmt.Errorf("module %q: %w", t.module, err)
	}
	fail := func(kind tool.ErrorKind, format string, a ...any) (tool.Result, error) {
		msg := fmt.Sprintf("module %q, tool %q: ", t.module, t.remote) + fmt.Sprintf(format, a...)
		return tool.Result{IsError: true, Kind: kind, Error: msg}, nil
	}
	switch res.Outcome {
	case sandbox.TimedOut:
		if ctx.Err() != nil {
			return tool.Result{}, context.Cause(ctx)
		}
		return fail(tool.KindTimeout, "stopped at its deadline of %s", t.timeout)
	case sandbox.OutputLimit:
		return fail(tool.KindToolError, "stopped: it wrote more output than the limit allows")
	case sandbox.MemoryLimit:
		return fail(tool.KindToolError, "ran out of memory at its limit")
	case sandbox.Signaled:
		return fail(tool.KindToolError, "trapped: %s", res.Signal)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		if len(msg) > maxStderrQuoted {
			msg = "…" + msg[len(msg)-maxStderrQuoted:]
		}
		if msg == "" {
			msg = fmt.Sprintf("exited with status %d", res.ExitCode)
		}
		return fail(tool.KindToolError, "%s", msg)
	}
	return tool.Result{Output: string(res.Stdout)}, nil
}
