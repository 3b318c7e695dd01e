// Package wasm runs WebAssembly modules (WASI preview 1) as sandboxed
// tools, in process, on the wazero runtime.
//
// A module sees nothing of the host unless granted: no files, environment,
// clock, network or arguments. A run may be given arguments, an environment
// (checked like [sandbox.Policy.Env]) and a workspace, which the module sees
// read-only at "/" through an [os.Root], so that no symbolic link leads out
// of it (wazero's own directory mounts follow links out, and are never
// used); further directories may be granted read-only at their own
// paths. Memory is capped by a page limit, and everything else a module
// can make the host allocate (tables, the runtime's structures for its
// definitions, compiled code) by [Limits], checked before the module is
// compiled; the run stops when its context is done, and output is capped:
// a module that writes more than the limit is stopped.
//
// A module runs as a WASI command ([Module.Run]: instantiated, run from
// _start to its end, discarded) or as a reactor ([Module.Instantiate]:
// instantiated once, its exported functions called any number of times,
// its memory kept between calls).
//
// Compiled code is cached on disk when a cache directory is given, so a
// second process does not compile the same module again.
package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// DefaultMemoryPages is the memory limit when Options.MemoryPages is zero:
// 4096 pages of 64 KiB, 256 MiB.
const DefaultMemoryPages = 4096

// Layer is the layer a WebAssembly run reports in Result.Layers.
const Layer sandbox.Layer = "wasm"

// Options configure a Runtime.
type Options struct {
	// CacheDir holds compiled code across processes. Empty means an
	// in-memory cache only.
	CacheDir string
	// MemoryPages caps each module's linear memory, in 64 KiB pages. Zero
	// means DefaultMemoryPages.
	MemoryPages uint32
	// Limits bound everything else a module can make the host allocate:
	// tables, definitions, locals, its size. The zero Limits has the
	// defaults.
	Limits Limits
}

// A Runtime compiles and runs modules. It is safe for concurrent use.
type Runtime struct {
	rt     wazero.Runtime
	cache  wazero.CompilationCache
	limits Limits
	pages  uint32
}

// NewRuntime returns a Runtime with WASI preview 1 available to modules.
// Close releases it.
func NewRuntime(ctx context.Context, opts Options) (*Runtime, error) {
	pages := opts.MemoryPages
	if pages == 0 {
		pages = DefaultMemoryPages
	}
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: cache: %w", err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(pages).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		cache.Close(ctx)
		return nil, fmt.Errorf("wasm: WASI: %w", err)
	}
	return &Runtime{rt: rt, cache: cache, limits: opts.Limits.withDefaults(), pages: pages}, nil
}

// Close releases the runtime and every module compiled with it.
func (r *Runtime) Close(ctx context.Context) error {
	err := r.rt.Close(ctx)
	if cerr := r.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// A Module is compiled code, ready to run any number of times, also
// concurrently.
type Module struct {
	r  *Runtime
	cm wazero.CompiledModule
}

// Compile compiles a WebAssembly binary, or takes it from the cache. It
// first checks the binary against the runtime's [Limits] and memory
// limit, and refuses a module over one (the error wraps
// [ErrModuleLimit]) or whose declared sizes do not fit its bytes, before
// anything is allocated for it.
func (r *Runtime) Compile(ctx context.Context, bin []byte) (*Module, error) {
	bin, err := checkModule(bin, r.limits, r.pages)
	if err != nil {
		return nil, fmt.Errorf("wasm: module refused: %w", err)
	}
	cm, err := r.rt.CompileModule(ctx, bin)
	if err != nil {
		return nil, fmt.Errorf("wasm: compile: %w", err)
	}
	return &Module{r: r, cm: cm}, nil
}

// Config describes one run of a module.
type Config struct {
	// Args are the module's arguments; Args[0] is its name by convention.
	Args []string
	// Env is the module's whole environment as NAME=value pairs; a
	// variable [sandbox.Policy.Env] refuses (a secret-looking name, see
	// [sandbox.SecretWord], or a URL with credentials in its value) is
	// refused.
	Env []string
	// Workspace is a host directory the module sees read-only at "/".
	// Empty means none.
	Workspace string
	// ReadOnly are further host directories (absolute paths) the module
	// sees read-only, each at its own path. A path that is not a
	// directory is refused: a module sees directories, not single files.
	ReadOnly []string
	// Stdin is the module's standard input; nil means empty.
	Stdin io.Reader
	// Output bounds stdout and stderr together; the run is stopped when
	// the module writes more. Zero means sandbox.DefaultOutput.
	Output int
}

var errOutputLimit = ErrOutputLimit

// Run instantiates the module and runs its _start function. It returns an
// error only when the run could not start; how the module ended is in the
// Result: exited (with its exit code), timed_out when ctx ended it,
// output_limit, memory_limit when it failed allocating at the page limit, or
// signaled for a trap (Signal holds the trap).
func (m *Module) Run(ctx context.Context, c Config) (*sandbox.Result, error) {
	mc, roots, err := m.moduleConfig(c)
	if err != nil {
		return nil, err
	}
	defer closeAll(roots)
	limit := c.Output
	if limit <= 0 {
		limit = sandbox.DefaultOutput
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	out := &budget{left: limit, stop: func() { cancel(errOutputLimit) }}
	stdout, stderr := &stream{b: out}, &stream{b: out}
	mc = mc.WithStdout(stdout).WithStderr(stderr)
	start := time.Now()
	mod, err := m.r.rt.InstantiateModule(ctx, m.cm, mc)
	if mod != nil {
		mod.Close(context.Background())
	}
	res := &sandbox.Result{
		Outcome:   sandbox.Exited,
		Stdout:    stdout.bytes(),
		Stderr:    stderr.bytes(),
		Truncated: out.exceeded(),
		Duration:  time.Since(start),
		Layers:    []sandbox.Layer{Layer},
	}
	var exit *sys.ExitError
	switch {
	case errors.Is(context.Cause(ctx), errOutputLimit):
		res.Outcome, res.ExitCode = sandbox.OutputLimit, -1
	case err != nil && ctx.Err() != nil:
		res.Outcome, res.ExitCode = sandbox.TimedOut, -1
	case errors.As(err, &exit):
		res.ExitCode = int(exit.ExitCode())
		if res.ExitCode != 0 && bytes.Contains(bytes.ToLower(res.Stderr), []byte("out of memory")) {
			res.Outcome = sandbox.MemoryLimit
		}
	case err != nil:
		res.Outcome, res.ExitCode, res.Signal = sandbox.Signaled, -1, err.Error()
	}
	return res, nil
}

func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return bytes.NewReader(nil)
	}
	return r
}

// budget is shared by a run's stdout and stderr.
type budget struct {
	mu   sync.Mutex
	left int
	over bool
	stop func()
}

func (b *budget) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// stream keeps what fits in the budget; past it, the write fails and the
// run is stopped.
type stream struct {
	b   *budget
	buf []byte
}

func (s *stream) Write(p []byte) (int, error) {
	keep, first := s.b.take(len(p))
	s.b.mu.Lock()
	s.buf = append(s.buf, p[:keep]...)
	s.b.mu.Unlock()
	if first {
		s.b.stop()
	}
	if keep < len(p) {
		return keep, errOutputLimit
	}
	return len(p), nil
}

// take counts n bytes written against the budget: keep is how many fit,
// first is true when this write is the first to go past it.
func (b *budget) take(n int) (keep int, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	keep = min(n, b.left)
	b.left -= keep
	if keep < n {
		first = !b.over
		b.over = true
	}
	return keep, first
}

func (s *stream) bytes() []byte {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	return s.buf
}
