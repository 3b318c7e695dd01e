package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/wasm"
	"github.com/tetratelabs/wazero/sys"
)

// A reactor is the pool of warm instances of a reactor module: at most
// size of them, each serving one call at a time. An instance is kept
// after a call that went well, and closed after any other (stopped at
// its deadline, trapped, exited), or when its memory has grown past
// recycleAt: the next call instantiates a fresh one.
type reactor struct {
	mod       *wasm.Module
	cfg       wasm.Config
	slots     chan struct{} // one token per instance that may exist
	recycleAt uint32

	mu     sync.Mutex
	idle   []*wasm.Instance
	closed bool
}

// recycleShare is the share of the memory limit past which an instance
// is recycled after its call: a module that leaks memory, or keeps too
// much between calls, starts afresh before it runs out.
const recycleShare = 3 / 4.0

func newReactor(mod *wasm.Module, cfg wasm.Config, size int, pages uint32) *reactor {
	return &reactor{
		mod: mod, cfg: cfg, slots: make(chan struct{}, size),
		recycleAt: uint32(float64(uint64(pages)<<16) * recycleShare),
	}
}

// warm instantiates one instance and keeps it idle.
func (r *reactor) warm(ctx context.Context) error {
	r.slots <- struct{}{}
	in, err := r.mod.Instantiate(ctx, r.cfg)
	if err != nil {
		<-r.slots
		return err
	}
	r.release(in, true)
	return nil
}

var errReactorClosed = errors.New("module closed")

// acquire takes an idle instance, or instantiates one when fewer than
// the pool's size exist; it waits for one while ctx allows.
func (r *reactor) acquire(ctx context.Context) (*wasm.Instance, error) {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.slots
		return nil, errReactorClosed
	}
	if n := len(r.idle); n > 0 {
		in := r.idle[n-1]
		r.idle = r.idle[:n-1]
		r.mu.Unlock()
		return in, nil
	}
	r.mu.Unlock()
	in, err := r.mod.Instantiate(ctx, r.cfg)
	if err != nil {
		<-r.slots
		return nil, err
	}
	return in, nil
}

// release gives the instance back: kept idle when keep is set and its
// memory is under the recycling threshold, closed otherwise.
func (r *reactor) release(in *wasm.Instance, keep bool) {
	if keep && in.MemorySize() > r.recycleAt {
		keep = false
	}
	r.mu.Lock()
	if keep && !r.closed {
		r.idle = append(r.idle, in)
		in = nil
	}
	r.mu.Unlock()
	if in != nil {
		in.Close()
	}
	<-r.slots
}

// close closes the idle instances; the busy ones close when released.
func (r *reactor) close() {
	r.mu.Lock()
	r.closed = true
	idle := r.idle
	r.idle = nil
	r.mu.Unlock()
	for _, in := range idle {
		in.Close()
	}
}

// callReactor makes one call through a warm instance: the tool's name
// and arguments are written into a buffer clawtool_alloc returns,
// clawtool_call runs the tool, and its result, a JSON object, is read
// back. ctx is the caller's, rctx the call's with its deadline.
func (t *moduleTool) callReactor(ctx, rctx context.Context, args json.RawMessage) (tool.Result, error) {
	r := t.reactor
	in, err := r.acquire(rctx)
	if err != nil {
		return t.reactorError(ctx, rctx, nil, err)
	}
	res, keep, err := t.exchange(rctx, in, args)
	if err != nil {
		res, err = t.reactorError(ctx, rctx, in, err)
	}
	r.release(in, keep && err == nil)
	return res, err
}

// exchange runs the reactor ABI on in. keep is false when the instance
// is not to be used again.
func (t *moduleTool) exchange(ctx context.Context, in *wasm.Instance, args []byte) (res tool.Result, keep bool, err error) {
	size := len(t.remote) + len(args)
	out, err := in.Call(ctx, exportAlloc, uint64(size))
	if err != nil {
		return tool.Result{}, false, err
	}
	if len(out) != 1 {
		res, _ = t.fail(tool.KindToolError, "%s returned %d values, want 1", exportAlloc, len(out))
		return res, false, nil
	}
	ptr := uint32(out[0])
	buf := make([]byte, 0, size)
	buf = append(append(buf, t.remote...), args...)
	if !in.Write(ptr, buf) {
		res, _ = t.fail(tool.KindToolError, "%s returned a buffer outside the module's memory", exportAlloc)
		return res, false, nil
	}
	out, err = in.Call(ctx, exportCall, uint64(ptr), uint64(len(t.remote)), uint64(len(args)))
	if err != nil {
		return tool.Result{}, false, err
	}
	if len(out) != 1 {
		res, _ = t.fail(tool.KindToolError, "%s returned %d values, want 1", exportCall, len(out))
		return res, false, nil
	}
	rptr, rlen := uint32(out[0]>>32), uint32(out[0])
	limit := t.cfg.Output
	if limit <= 0 {
		limit = sandbox.DefaultOutput
	}
	if uint64(rlen) > uint64(limit) {
		res, _ = t.fail(tool.KindToolError, "its result of %d bytes is larger than the limit of %d bytes", rlen, limit)
		return res, true, nil
	}
	b, ok := in.Read(rptr, rlen)
	if !ok {
		res, _ = t.fail(tool.KindToolError, "malformed result: %d bytes at %#x are outside the module's memory", rlen, rptr)
		return res, false, nil
	}
	var reply struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if err := json.Unmarshal(b, &reply); err != nil || (reply.Output == nil) == (reply.Error == nil) {
		why := `want a JSON object with "output" or "error", a string`
		if err != nil {
			why = err.Error()
		}
		res, _ = t.fail(tool.KindToolError, "malformed result (%s): %s", why, quote(b, 200))
		return res, true, nil
	}
	if reply.Error != nil {
		res, _ = t.fail(tool.KindToolError, "%s", *reply.Error)
		return res, true, nil
	}
	return tool.Result{Output: *reply.Output}, true, nil
}

// reactorError turns the error of a failed reactor call into a Result.
func (t *moduleTool) reactorError(ctx, rctx context.Context, in *wasm.Instance, err error) (tool.Result, error) {
	var exit *sys.ExitError
	switch {
	case ctx.Err() != nil:
		return tool.Result{}, context.Cause(ctx)
	case errors.Is(err, errModuleDeadline) || errors.Is(context.Cause(rctx), errModuleDeadline):
		return t.fail(tool.KindTimeout, "stopped at its deadline of %s", t.timeout)
	case errors.Is(err, wasm.ErrOutputLimit):
		return t.fail(tool.KindToolError, "stopped: it wrote more output than the limit allows")
	case errors.Is(err, errReactorClosed):
		return tool.Result{IsError: true, Kind: tool.KindUnavailable, Error: fmt.Sprintf("module %q is closed", t.module)}, nil
	case errors.As(err, &exit):
		msg := ""
		if in != nil {
			msg = quoteStderr(in.Stderr())
		}
		if msg == "" {
			msg = fmt.Sprintf("exited with status %d", exit.ExitCode())
		}
		return t.fail(tool.KindToolError, "%s", msg)
	}
	if in != nil {
		if msg := quoteStderr(in.Stderr()); msg != "" {
			return t.fail(tool.KindToolError, "trapped: %v: %s", err, msg)
		}
	}
	return t.fail(tool.KindToolError, "failed: %v", err)
}

// quote is b as a Go string, cut to n bytes.
func quote(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%q…", b[:n])
	}
	return fmt.Sprintf("%q", b)
}
