package wasm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Exports returns the names of the functions the module exports, sorted.
func (m *Module) Exports() []string {
	var out []string
	for name := range m.cm.ExportedFunctions() {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ErrOutputLimit is the error of an [Instance.Call] stopped because the
// module wrote more to its standard output and error than the limit.
var ErrOutputLimit = errors.New("wasm: output limit reached")

// An Instance is a module instantiated once and kept, so that its exported
// functions can be called any number of times: a WASI reactor, whose
// _initialize function (when it exports one) runs when it is
// instantiated, instead of a command's _start. Its memory and any other
// state persist from one call to the next.
//
// Calls are made one at a time: an Instance serializes them. A call that
// fails in any way (its context ends, it traps, it writes past the output
// limit, it exits) closes the Instance, and every later call fails at
// once; make a new one.
type Instance struct {
	mod    api.Module
	mem    api.Memory
	roots  []*os.Root
	out    *budget
	stderr *stream // what the current call wrote to stderr
	limit  int

	mu     sync.Mutex // one call at a time
	closed bool
}

// Instantiate instantiates the module as a reactor, with c's arguments,
// environment, files and output limit (c.Stdin is ignored: a reactor
// reads no input). The output limit applies to each call. ctx bounds the
// instantiation, including _initialize. Close releases the Instance.
func (m *Module) Instantiate(ctx context.Context, c Config) (*Instance, error) {
	mc, roots, err := m.moduleConfig(c)
	if err != nil {
		return nil, err
	}
	limit := c.Output
	if limit <= 0 {
		limit = sandbox.DefaultOutput
	}
	i := &Instance{roots: roots, limit: limit, out: &budget{left: limit, stop: func() {}}}
	i.stderr = &stream{b: i.out}
	starts := []string{}
	if _, ok := m.cm.ExportedFunctions()["_initialize"]; ok {
		starts = append(starts, "_initialize")
	}
	mc = mc.WithStdout(sink{i.out}).WithStderr(i.stderr).WithStartFunctions(starts...)
	mod, err := m.r.rt.InstantiateModule(ctx, m.cm, mc)
	if err != nil {
		if mod != nil {
			mod.Close(context.Background())
		}
		i.closeRoots()
		var exit *sys.ExitError
		if errors.As(err, &exit) && ctx.Err() != nil {
			return nil, fmt.Errorf("wasm: instantiate: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("wasm: instantiate: %w", err)
	}
	i.mod, i.mem = mod, mod.Memory()
	if i.mem == nil {
		i.Close()
		return nil, errors.New("wasm: instantiate: the module exports no memory")
	}
	return i, nil
}

// sink takes a reactor's standard output: it is dropped, and only counts
// against the call's output limit.
type sink struct{ b *budget }

func (s sink) Write(p []byte) (int, error) {
	keep, first := s.b.take(len(p))
	if first {
		s.b.stop()
	}
	if keep < len(p) {
		return keep, ErrOutputLimit
	}
	return len(p), nil
}

// moduleConfig is the wazero configuration of a run or instance of c;
// the roots it opened are the caller's to close.
func (m *Module) moduleConfig(c Config) (wazero.ModuleConfig, []*os.Root, error) {
	if err := (sandbox.Policy{Env: c.Env}).Validate(); err != nil {
		return nil, nil, err
	}
	if c.Env == nil {
		c.Env = []string{}
	}
	mc := wazero.NewModuleConfig().WithName("").WithArgs(c.Args...).WithStdin(orEmpty(c.Stdin))
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		mc = mc.WithEnv(k, v)
	}
	var roots []*os.Root
	fsc := wazero.NewFSConfig()
	mount := func(dir, guest string) error {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return err
		}
		roots = append(roots, root)
		fsc = fsc.WithFSMount(regularFS{root}, guest)
		return nil
	}
	if c.Workspace != "" {
		if why := hostView(c.Workspace); why != "" {
			return nil, nil, fmt.Errorf("wasm: workspace %q %s", c.Workspace, why)
		}
		if err := mount(c.Workspace, "/"); err != nil {
			closeAll(roots)
			return nil, nil, fmt.Errorf("wasm: workspace: %w", err)
		}
	}
	for _, dir := range c.ReadOnly {
		if err := checkMount(dir); err != nil {
			closeAll(roots)
			return nil, nil, err
		}
		if err := mount(dir, dir); err != nil {
			closeAll(roots)
			return nil, nil, fmt.Errorf("wasm: read-only path: %w", err)
		}
	}
	if len(roots) > 0 {
		mc = mc.WithFSConfig(fsc)
	}
	return mc, roots, nil
}

// checkMount refuses a read-only path that is not an absolute path to a
// directory.
func checkMount(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("wasm: read-only path %q is not absolute", dir)
	}
	if why := hostView(dir); why != "" {
		return fmt.Errorf("wasm: read-only path %q %s", dir, why)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("wasm: read-only path: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("wasm: read-only path %q is not a directory: a module sees directories, not single files", dir)
	}
	return nil
}

func closeAll(roots []*os.Root) {
	for _, r := range roots {
		r.Close()
	}
}

// Call calls the exported function name with params and returns its
// results. ctx bounds the call: when it ends, the call stops and the
// Instance is closed. The error says why a call failed: ctx's cause, or
// an error wrapping [ErrOutputLimit], a trap or the module's exit.
func (i *Instance) Call(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil, errors.New("wasm: instance is closed")
	}
	f := i.mod.ExportedFunction(name)
	if f == nil {
		return nil, fmt.Errorf("wasm: the module exports no function %q", name)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	i.out.mu.Lock()
	i.out.left, i.out.over, i.out.stop = i.limit, false, func() { cancel(ErrOutputLimit) }
	i.stderr.buf = i.stderr.buf[:0]
	i.out.mu.Unlock()
	res, err := f.Call(ctx, params...)
	if err == nil {
		return res, nil
	}
	i.closeLocked()
	if cause := context.Cause(ctx); cause != nil {
		return nil, fmt.Errorf("wasm: call %s: %w", name, cause)
	}
	return nil, fmt.Errorf("wasm: call %s: %w", name, err)
}

// Stderr returns what the last call wrote to its standard error (within
// the output limit; standard output is counted, then dropped).
func (i *Instance) Stderr() []byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.stderr.bytes())
}

// Read returns a copy of n bytes of the instance's memory at ptr; ok is
// false when they are not all inside it.
func (i *Instance) Read(ptr, n uint32) (b []byte, ok bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil, false
	}
	v, ok := i.mem.Read(ptr, n)
	if !ok {
		return nil, false
	}
	return slices.Clone(v), true
}

// Write copies b into the instance's memory at ptr; ok is false when it
// does not fit.
func (i *Instance) Write(ptr uint32, b []byte) (ok bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return !i.closed && i.mem.Write(ptr, b)
}

// MemorySize is the size of the instance's memory in bytes.
func (i *Instance) MemorySize() uint32 {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return 0
	}
	return i.mem.Size()
}

// Close releases the instance. It waits for a call in progress.
func (i *Instance) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.closeLocked()
	return nil
}

func (i *Instance) closeLocked() {
	if i.closed {
		return
	}
	i.closed = true
	if i.mod != nil {
		i.mod.Close(context.Background())
	}
	i.closeRoots()
}

func (i *Instance) closeRoots() {
	closeAll(i.roots)
	i.roots = nil
}

// hostViews are the host's views of its processes, kernel and devices. A
// module runs inside this process: /proc/self is this program, its
// command line, its environment (the program's secrets) and its memory.
var hostViews = []string{"/proc", "/sys", "/dev"}

// hostView says why a module may not see dir, or "": it is, lies in or
// holds one of hostViews, as written or through links.
func hostView(dir string) string {
	forms := []string{filepath.Clean(dir)}
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != forms[0] {
		forms = append(forms, real)
	}
	within := func(p, d string) bool { return p == d || d == "/" || strings.HasPrefix(p, d+"/") }
	for _, v := range hostViews {
		for _, f := range forms {
			switch {
			case within(f, v):
				return "is or lies in " + v + ", the host's view of its processes, kernel or devices (this program's own memory and environment among them)"
			case within(v, f):
				return "holds " + v + ", the host's view of its processes, kernel or devices (this program's own memory and environment among them)"
			}
		}
	}
	return ""
}

// regularFS is a root's file system that opens regular files and
// directories only, without blocking: a fifo opened for reading blocks
// until a writer comes, past the module's deadline, in a thread nothing
// interrupts (a device could do anything). It opens with O_NONBLOCK and
// looks at what it opened, so a name swapped for a fifo after a look
// does not block either.
type regularFS struct{ r *os.Root }

// Open opens name for reading, refusing what is neither a regular file
// nor a directory.
func (f regularFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	file, err := f.r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() && !st.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return file, nil
}

// Stat describes name, following links inside the root, without opening
// it.
func (f regularFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrInvalid}
	}
	return f.r.Stat(name)
}
