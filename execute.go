package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/jsonschema"
	"github.com/miniopenclaw/tool/internal/jsontext"
	"github.com/miniopenclaw/tool/internal/showtext"
	"github.com/miniopenclaw/tool/internal/suggest"
)

// Execute calls the tool registered under name with args and returns what
// the model should see. It never panics and never returns a Result with an
// empty Kind when IsError is set. In order:
//
//   - An unknown name gives a [KindNotFound] result that lists close matches
//     and the available tools.
//   - Arguments are parsed strictly before any tool code runs: malformed
//     JSON, trailing data, duplicate keys, invalid UTF-8 or lone
//     surrogates, a top level that is not an object, input over the size
//     or depth limit (see [WithArgumentLimits]), and keys that
//     encoding/json would bind to a declared property of a hand-written
//     schema though they are spelled otherwise ("HOST", or "hoſt" whose
//     U+017F folds to s) give a [KindInvalidArguments] result. Empty
//     arguments count as {}.
//   - The arguments are validated against the tool's schema, every
//     violation is reported with its JSON pointer, what was expected and
//     what came, and the received arguments are echoed (shortened) so the
//     model can correct itself; the message is at most
//     [MaxArgumentErrorBytes] long, with control characters escaped.
//     Defaults from the schema are applied.
//     Parsing and validation happen in the caller's goroutine before the
//     time limit starts; their work is bounded instead, by the size and
//     depth limits and by a budget proportional to the size of the
//     arguments (every keyword's work is charged, regular expressions by
//     the length of what they match): with the default 1 MiB cap, the
//     most expensive shapes measured are refused after about half a
//     second of one core, and typical calls take microseconds. Arguments
//     that would need more work give a [KindInvalidArguments] result
//     saying so.
//   - The tool runs under its time limit (its [Options.Timeout], else the
//     registry's default), in a context whose cause is [ErrTimeout] when
//     the limit runs out. The limit covers the tool's own run only, from
//     the moment it is called to its return; a limit of a few
//     milliseconds is not eaten by checking large arguments. A timeout
//     gives a [KindTimeout] result; the end of the caller's own ctx gives
//     [KindCanceled].
//   - A tool still running a grace period after its context ended is
//     abandoned: the call is reported and counted in [Stats]. Go cannot
//     stop a goroutine, so the tool's goroutine keeps running until it
//     returns; run untrusted or long work in a subprocess sandbox. A tool
//     with [Options.Inline] runs in the caller's goroutine instead and
//     cannot be abandoned.
//   - An error returned by the tool gives a [KindToolError] result carrying
//     the error's message. A panic gives a [KindPanic] result with a short
//     message and a correlation ID; the value and stack are logged.
//   - A success carrying a [Part] that [Part.Validate] refuses gives a
//     [KindToolError] result naming the part.
//   - Output longer than the result budget is cut, with a notice telling
//     the model what was cut and how to ask for less.
func (r *Registry) Execute(ctx context.Context, name string, args json.RawMessage) Result {
	res, _ := r.call(ctx, name, args)
	return res
}

// ExecuteHere is [Registry.Execute] for a caller that can give up its
// goroutine, such as a server with its own pool of goroutines: it runs
// the tool in the calling goroutine even when the tool is not
// [Options.Inline], which saves the goroutine Execute starts for the tool
// and the wake-up of the caller when the tool returns.
//
// Everything else is as in Execute: the arguments are parsed and
// validated first, the tool runs under its time limit with the panic
// guard, and its result is checked and cut to the result budget. The
// difference is in who gives up on a tool that ignores its context. When
// the tool is still running a grace period (see [WithGracePeriod]) after
// its context ended, the call is abandoned as Execute abandons it (logged
// and counted in [Stats], StillRunning until the tool returns), and
// abandoned is called, once, from another goroutine, with the Result
// Execute would have returned ([KindTimeout] or [KindCanceled], metadata
// "ignored_context"). That happens at most a quarter of the grace period
// (or 5 ms) later than Execute would have returned: one watcher per
// registry checks these calls a few times per grace period, rather than
// a timer per call. abandoned runs on that watcher's goroutine, one call
// after another: it should hand the result on and return, not block. The caller's goroutine is still inside the tool:
// ExecuteHere returns only when the tool does, with ok false and a zero
// Result, which must be discarded, since the call was already answered
// through abandoned. The caller answers its own caller from abandoned
// and replaces the goroutine it lost; the goroutine should end once
// ExecuteHere returns. Otherwise abandoned is never called and ok is
// true: res is what Execute would have returned. A tool that is Inline
// is watched the same way here. A nil abandoned makes ExecuteHere the
// same as Execute, ok always true.
//
// When ctx has a deadline no later than the tool's time limit, the tool
// runs in ctx itself rather than in a context derived from it, which
// saves making one (Execute makes one and cancels it when the tool
// returns): the caller ends ctx once ExecuteHere has returned.
func (r *Registry) ExecuteHere(ctx context.Context, name string, args json.RawMessage, abandoned func(Result)) (res Result, ok bool) {
	e := r.lookup(name)
	if e == nil {
		res, _ = r.notFound(name)
		return res, true
	}
	res, err := r.run(ctx, e, args, abandoned)
	if err == errAnsweredElsewhere {
		return Result{}, false
	}
	return res, true
}

// errAnsweredElsewhere is what runChecked returns for a call of
// ExecuteHere whose tool was abandoned: its result went to the abandoned
// callback.
var errAnsweredElsewhere = errors.New("the call was abandoned and answered through the callback")

// call is Execute that also returns the Go error behind a failed result:
// nil for success, else an error for errors.Is/As (ErrNotFound,
// *ArgumentError, ErrTimeout, *PanicError, the tool's own error, ...).
func (r *Registry) call(ctx context.Context, name string, args []byte) (Result, error) {
	e := r.lookup(name)
	if e == nil {
		return r.notFound(name)
	}
	return r.run(ctx, e, args, nil)
}

// lookup returns the entry registered under name, or nil.
func (r *Registry) lookup(name string) *entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools[name]
}

func (r *Registry) notFound(name string) (Result, error) {
	return r.notFoundAmong(name, r.entries())
}

// notFoundAmong reports an unknown tool, suggesting and listing the
// tools of entries.
func (r *Registry) notFoundAmong(name string, entries []*entry) (Result, error) {
	names := make([]string, 0, 8)
	for _, e := range entries {
		names = append(names, e.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q", shorten(name, 80))
	b.WriteString(".")
	if close := suggest.Closest(name, names, 3); len(close) > 0 {
		b.WriteString(" Did you mean ")
		for i, c := range close {
			if i > 0 {
				b.WriteString(" or ")
			}
			fmt.Fprintf(&b, "%q", c)
		}
		b.WriteString("?")
	}
	switch {
	case len(names) == 0:
		b.WriteString(" No tools are available.")
	case len(names) <= 30:
		b.WriteString(" Available tools: ")
		b.WriteString(strings.Join(names, ", "))
		b.WriteString(".")
	default:
		fmt.Fprintf(&b, " %d tools are available, including: %s.", len(names), strings.Join(names[:30], ", "))
	}
	return errorResult(KindNotFound, b.String()), fmt.Errorf("%w: %q", ErrNotFound, name)
}

// run executes a registered tool; see Execute. With a non-nil
// abandoned, the tool runs in the caller's goroutine; see ExecuteHere.
func (r *Registry) run(ctx context.Context, e *entry, args []byte, abandoned func(Result)) (Result, error) {
	if err := ctx.Err(); err != nil {
		cause := context.Cause(ctx)
		return errorResult(KindCanceled, fmt.Sprintf("call to tool %q was canceled before it started: %v", e.name, cause)), cause
	}
	// Arguments are checked, and results encoded, in the caller's
	// goroutine, whose stack has already grown; only the tool itself runs
	// in a goroutine of its own (unless it is Inline), so that a tool that
	// ignores its context cannot hold the caller past the grace period.
	var c pendingCall
	if e.direct == nil {
		checked, err, p := r.checkHandWritten(e, args)
		if p != nil {
			return panicked(e, p)
		}
		if err != nil {
			return errorResult(KindInvalidArguments, err.Error()), err
		}
		c = &handCall{t: e.tool, args: checked}
	} else {
		var res Result
		var err error
		var p *PanicError
		c, res, err, p = r.prepare(e, args)
		if p != nil {
			return panicked(e, p)
		}
		if c == nil {
			return res, err
		}
	}
	if r.cfg.authorizer != nil {
		req := AccessRequest{Tool: e.tool, Name: e.name, Options: e.opts, call: c}
		if res, err, refused := r.authorize(ctx, e, &req); refused {
			return res, err
		}
		if rec := r.cfg.recorder; rec != nil {
			start := time.Now()
			if abandoned != nil {
				// The callback gets its own copy of req: capturing req
				// itself would move it to the heap on every authorized
				// call, this path or not.
				req, answer := req, abandoned
				abandoned = func(res Result) {
					r.recordOutcome(ctx, e, rec, req, res, time.Since(start))
					answer(res)
				}
			}
			res, err := r.runChecked(ctx, e, c, abandoned)
			if err != errAnsweredElsewhere {
				r.recordOutcome(ctx, e, rec, req, res, time.Since(start))
			}
			return res, err
		}
	}
	return r.runChecked(ctx, e, c, abandoned)
}

// runChecked runs a call whose arguments have been checked and that may
// run; see Execute, and ExecuteHere for a non-nil abandoned.
func (r *Registry) runChecked(ctx context.Context, e *entry, c pendingCall, abandoned func(Result)) (Result, error) {
	timeout := e.opts.Timeout
	if timeout == 0 {
		timeout = r.cfg.timeout
	}
	var callCtx context.Context
	switch {
	case abandoned != nil && deadlineBy(ctx, timeout):
		// ExecuteHere: ctx ends first, and its caller ends it after the
		// call; a context derived from it would only cost a registration
		// in ctx.
		callCtx = ctx
	case timeout > 0 && e.opts.SharedTimer:
		lc := r.limits.start(ctx, timeout)
		defer r.limits.done(lc)
		callCtx = lc
	case timeout > 0:
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeoutCause(ctx, timeout, ErrTimeout)
		defer cancel()
	default:
		var cancel context.CancelFunc
		callCtx, cancel = context.WithCancel(ctx)
		defer cancel()
	}

	var p *PanicError
	if abandoned != nil {
		var err error
		if p, err = r.runHere(ctx, callCtx, e, c, timeout, abandoned); err != nil {
			return Result{}, err
		}
	} else if e.opts.Inline {
		p = r.guarded(callCtx, e, c)
	} else {
		done := make(chan *PanicError, 1)
		go r.invoke(callCtx, e, c, done)
		select {
		case p = <-done:
		case <-callCtx.Done():
			grace := time.NewTimer(r.cfg.grace)
			select {
			case p = <-done:
				grace.Stop()
			case <-grace.C:
				return r.abandon(ctx, callCtx, e, timeout, done)
			}
		}
	}
	if p != nil {
		return panicked(e, p)
	}
	res, err, p := r.complete(e, c)
	if p != nil {
		return panicked(e, p)
	}
	return r.finish(ctx, callCtx, e, timeout, res, err)
}

// States of a call that ExecuteHere runs in its caller's goroutine.
const (
	hereRunning int32 = iota
	hereReturned
	hereAbandoned
)

// A hereCall is a call that ExecuteHere runs in its caller's goroutine,
// watched by the registry's sweeper.
type hereCall struct {
	ctx, callCtx context.Context
	e            *entry
	timeout      time.Duration
	abandoned    func(Result)

	state    atomic.Int32
	answered chan struct{} // closed once abandoned has returned; set before state becomes hereAbandoned

	slot  int    // in sweeper.calls; -1 when not there; guarded by sweeper.mu
	ended uint64 // the sweeper's tick that first saw callCtx ended; guarded by sweeper.mu
}

// sweepTicks is how many ticks of the sweeper make a grace period: a
// call is abandoned between one grace period and a quarter more after
// its context ended.
const sweepTicks = 4

// A sweeper watches the calls that ExecuteHere runs in their callers'
// goroutines, and abandons those whose tool is still running a grace
// period after the call's context ended. One sweeper per registry, a
// goroutine that ticks only while such calls are made, rather than a
// timer or a context callback per call: either cost more than the rest
// of a small call's checks.
type sweeper struct {
	mu      sync.Mutex
	calls   []*hereCall
	running bool   // the sweeper's goroutine runs
	busy    bool   // a call started since the last tick
	tick    uint64 // ticks so far
}

// runHere runs the tool in the caller's goroutine; see ExecuteHere. It
// returns errAnsweredElsewhere when the sweeper abandoned the call (and
// answered it through abandoned) before the tool returned.
func (r *Registry) runHere(ctx, callCtx context.Context, e *entry, c pendingCall, timeout time.Duration, abandoned func(Result)) (*PanicError, error) {
	h := &hereCall{ctx: ctx, callCtx: callCtx, e: e, timeout: timeout, abandoned: abandoned}
	w := &r.sweeper
	w.mu.Lock()
	h.slot = len(w.calls)
	w.calls = append(w.calls, h)
	w.busy = true
	if !w.running {
		w.running = true
		go r.sweep()
	}
	w.mu.Unlock()
	p := r.guarded(callCtx, e, c)
	w.mu.Lock()
	if h.slot >= 0 {
		w.drop(h)
	}
	w.mu.Unlock()
	if !h.state.CompareAndSwap(hereRunning, hereReturned) {
		<-h.answered
		r.returned(e)
		return nil, errAnsweredElsewhere
	}
	return p, nil
}

// drop removes h from the calls watched. w.mu is held.
func (w *sweeper) drop(h *hereCall) {
	last := len(w.calls) - 1
	w.calls[h.slot] = w.calls[last]
	w.calls[h.slot].slot = h.slot
	w.calls[last] = nil
	w.calls = w.calls[:last]
	h.slot = -1
}

// sweep abandons, at each tick, the calls of ExecuteHere whose context
// ended at least a grace period ago and whose tool has not returned. It
// ends after a tick that found no call and saw none start.
func (r *Registry) sweep() {
	w := &r.sweeper
	t := time.NewTicker(max(r.cfg.grace/sweepTicks, time.Millisecond))
	defer t.Stop()
	var due []*hereCall
	for range t.C {
		w.mu.Lock()
		w.tick++
		if len(w.calls) == 0 && !w.busy {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.busy = false
		for i := 0; i < len(w.calls); {
			h := w.calls[i]
			switch {
			case h.callCtx.Err() == nil:
			case h.ended == 0:
				h.ended = w.tick
			case w.tick-h.ended >= sweepTicks:
				h.answered = make(chan struct{})
				if h.state.CompareAndSwap(hereRunning, hereAbandoned) {
					w.drop(h)
					due = append(due, h)
					continue // another call is in slot i now
				}
			}
			i++
		}
		w.mu.Unlock()
		for i, h := range due {
			res, _ := r.abandoned(h.ctx, h.callCtx, h.e, h.timeout)
			h.abandoned(res)
			close(h.answered)
			due[i] = nil
		}
		due = due[:0]
	}
}

// deadlineBy reports whether ctx has a deadline no later than timeout
// from now; a timeout of zero or less is no limit.
func deadlineBy(ctx context.Context, timeout time.Duration) bool {
	d, ok := ctx.Deadline()
	return ok && (timeout <= 0 || !d.After(time.Now().Add(timeout)))
}

// handCall is one call of a tool with a hand-written schema.
type handCall struct {
	t    Tool
	args []byte
	res  Result
	err  error
}

func (c *handCall) run(ctx context.Context)      { c.res, c.err = c.t.Execute(ctx, c.args) }
func (c *handCall) finish() (Result, error)      { return c.res, c.err }
func (c *handCall) checkedArgs() ([]byte, error) { return c.args, nil }

// argument leaves a hand-written tool's arguments to Arguments: they are
// the caller's JSON, which only a parse can read.
func (c *handCall) argument(string) (ArgumentValue, bool) { return ArgumentValue{}, false }

// invoke runs the tool and reports on done when it has returned, with the
// panic it raised, if any.
func (r *Registry) invoke(ctx context.Context, e *entry, c pendingCall, done chan<- *PanicError) {
	done <- r.guarded(ctx, e, c)
}

// guarded runs the tool and returns the panic it raised, if any.
func (r *Registry) guarded(ctx context.Context, e *entry, c pendingCall) (p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = r.recovered(ctx, e, v)
		}
	}()
	c.run(ctx)
	return nil
}

// prepare checks the arguments of a tool built with New. Decoding can run
// code of the argument types (UnmarshalJSON, Enum), so it is guarded too.
func (r *Registry) prepare(e *entry, args []byte) (c pendingCall, res Result, err error, p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = r.recovered(context.Background(), e, v)
		}
	}()
	c, res, err = e.direct.prepare(args, r.cfg.limits)
	return c, res, err, nil
}

// checkHandWritten validates the arguments of a tool with a hand-written
// schema. A bug in the validator must not crash the caller either, so it is
// guarded like the tool itself.
func (r *Registry) checkHandWritten(e *entry, args []byte) (checked []byte, err error, p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = r.recovered(context.Background(), e, v)
		}
	}()
	checked, err = checkArgs(e, args, r.cfg.limits)
	return checked, err, nil
}

// complete builds the Result of a call that returned. Encoding a result
// can run code of the result's types (MarshalJSON), so it is guarded too.
func (r *Registry) complete(e *entry, c pendingCall) (res Result, err error, p *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			p = r.recovered(context.Background(), e, v)
		}
	}()
	res, err = c.finish()
	return res, err, nil
}

// recovered records a panic recovered from a tool: the model is told only
// the correlation ID; the value and the stack go to the log.
func (r *Registry) recovered(ctx context.Context, e *entry, v any) *PanicError {
	p := &PanicError{Tool: e.name, Value: v, Stack: debug.Stack(), CorrelationID: correlationID()}
	r.logger().LogAttrs(context.WithoutCancel(ctx), slog.LevelError, "tool panicked",
		slog.String("tool", e.name), slog.String("correlation_id", p.CorrelationID),
		slog.Any("panic", v), slog.String("stack", string(p.Stack)))
	return p
}

func panicked(e *entry, p *PanicError) (Result, error) {
	res := errorResult(KindPanic, fmt.Sprintf("tool %q failed with an internal error (correlation id %s); the details were logged", e.name, p.CorrelationID))
	res.Metadata = map[string]any{"correlation_id": p.CorrelationID}
	return res, p
}

// finish turns what the tool returned into the Result the model sees.
func (r *Registry) finish(ctx, callCtx context.Context, e *entry, timeout time.Duration, res Result, err error) (Result, error) {
	if callCtx.Err() != nil && (err != nil || res.IsError) {
		// The tool gave up because its context ended: say why.
		return r.stopped(ctx, callCtx, e, timeout, res, "")
	}
	if err != nil && !res.IsError {
		kind := KindToolError
		var ae *ArgumentError
		if errors.As(err, &ae) {
			kind = KindInvalidArguments
		}
		res = Result{Error: err.Error(), IsError: true, Kind: kind, Metadata: res.Metadata}
	}
	if res.IsError {
		if res.Kind == "" {
			res.Kind = KindToolError
		}
		if res.Error == "" {
			res.Error = fmt.Sprintf("tool %q failed without a message", e.name)
		}
		res = r.budgetFailure(e, res)
		if err == nil {
			err = toolFailure{msg: res.Error}
		}
		return res, err
	}
	for i, p := range res.Parts {
		if why := p.problem(); why != "" {
			err := fmt.Errorf("tool %q returned a malformed result: part %d: %s", e.name, i, why)
			return Result{Error: err.Error(), IsError: true, Kind: KindToolError, Metadata: res.Metadata}, err
		}
	}
	return r.budget(e, res), nil
}

// toolFailure is the Go error behind a Result the tool itself marked as
// an error.
type toolFailure struct{ msg string }

func (f toolFailure) Error() string { return f.msg }

// stopped reports a call whose context ended before the tool finished.
func (r *Registry) stopped(ctx, callCtx context.Context, e *entry, timeout time.Duration, res Result, extra string) (Result, error) {
	if ctx.Err() == nil && errors.Is(context.Cause(callCtx), ErrTimeout) {
		msg := fmt.Sprintf("tool %q timed out after %s%s; try a smaller or simpler request", e.name, timeout, extra)
		return Result{Error: msg, IsError: true, Kind: KindTimeout, Metadata: res.Metadata}, fmt.Errorf("tool %q: %w after %s", e.name, ErrTimeout, timeout)
	}
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.Canceled
	}
	msg := fmt.Sprintf("call to tool %q was canceled%s: %v", e.name, extra, cause)
	return Result{Error: msg, IsError: true, Kind: KindCanceled, Metadata: res.Metadata}, cause
}

// abandon reports a call whose tool did not return within the grace period
// after its context ended, and keeps count of its goroutine until it does.
func (r *Registry) abandon(ctx, callCtx context.Context, e *entry, timeout time.Duration, done <-chan *PanicError) (Result, error) {
	res, err := r.abandoned(ctx, callCtx, e, timeout)
	go func() {
		<-done
		r.returned(e)
	}()
	return res, err
}

// abandoned counts and logs a call whose tool did not return within the
// grace period after its context ended, and returns the call's result.
// The caller calls returned when the tool does.
func (r *Registry) abandoned(ctx, callCtx context.Context, e *entry, timeout time.Duration) (Result, error) {
	r.ignoredContext.Add(1)
	r.stillRunning.Add(1)
	r.logger().LogAttrs(context.WithoutCancel(ctx), slog.LevelWarn, "tool ignored its context; abandoning its goroutine",
		slog.String("tool", e.name), slog.Duration("grace", r.cfg.grace))
	res, err := r.stopped(ctx, callCtx, e, timeout, Result{}, " and did not stop")
	res.Metadata = map[string]any{"ignored_context": true}
	return res, errors.Join(err, fmt.Errorf("tool %q: %w", e.name, ErrIgnoredContext))
}

// returned records that the tool of an abandoned call returned.
func (r *Registry) returned(e *entry) {
	r.stillRunning.Add(-1)
	r.logger().LogAttrs(context.Background(), slog.LevelInfo, "abandoned tool call returned", slog.String("tool", e.name))
}

// outputLimit is the tool's result budget, <= 0 for none.
func (r *Registry) outputLimit(e *entry) int {
	if e.opts.MaxOutputBytes != 0 {
		return e.opts.MaxOutputBytes
	}
	return r.cfg.maxOutput
}

// budgetFailure cuts the message and the output of a failed result to
// the tool's result budget: a failure reaches the model like an output,
// and a tool that failed with megabytes of message (an error that quotes
// its input, a server's whole error body) would otherwise put them all
// into its context.
func (r *Registry) budgetFailure(e *entry, res Result) Result {
	limit := r.outputLimit(e)
	if limit <= 0 {
		return res
	}
	if len(res.Error) > limit {
		cut := runeCut(res.Error, limit)
		res.Error = res.Error[:cut] + fmt.Sprintf("\n[message truncated: it had %d bytes and only the first %d are shown]", len(res.Error), cut)
	}
	if len(res.Structured) > limit {
		res.Structured = nil
		res.Metadata = withMeta(res.Metadata, "structured_dropped", true)
	}
	if len(res.Output) > limit {
		cut := runeCut(res.Output, limit)
		res.Metadata = withMeta(res.Metadata, "truncated_bytes", len(res.Output)-cut)
		res.Output = res.Output[:cut] + fmt.Sprintf("\n[output truncated: the tool returned %d bytes and only the first %d are shown]", len(res.Output), cut)
	}
	return res
}

// runeCut returns the largest n <= limit at which s can be cut without
// splitting a UTF-8 sequence; s is longer than limit.
func runeCut(s string, limit int) int {
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}

// budget cuts Output, then the text of the text resource parts, to the
// tool's result budget: they are all text the model reads (Result.Text).
func (r *Registry) budget(e *entry, res Result) Result {
	limit := r.outputLimit(e)
	if limit <= 0 {
		return res
	}
	if len(res.Structured) > limit {
		res.Structured = nil
		res.Metadata = withMeta(res.Metadata, "structured_dropped", true)
	}
	left := limit - min(len(res.Output), limit)
	if len(res.Output) > limit {
		cut := runeCut(res.Output, limit)
		total := len(res.Output)
		res.Output = res.Output[:cut] + fmt.Sprintf(
			"\n[output truncated: the tool returned %d bytes and only the first %d are shown; ask for less, for example with a narrower query, a filter or a smaller page]",
			total, cut)
		res.Metadata = withMeta(res.Metadata, "truncated_bytes", total-cut)
	}
	return budgetParts(res, limit, left)
}

// budgetParts cuts the text of res's text resources to left bytes in all,
// in order, each cut one keeping a notice (so that it stays well formed).
// The rest of what Result.Text writes of the parts (a line for each, its
// MIME type, a resource's URI, a link's name and description, the
// notices) is charged to an allowance of limit bytes of its own, at
// least minPartsAllowance (so that a small budget still passes a few
// binary parts, which it does not cut): a part
// past it is dropped with every part after it, counted in
// Metadata["parts_dropped"] and named after Output (a link's 2 MiB
// description, or 100,000 one-byte images, went whole past the budget).
// The parts are copied before any is changed: they are the tool's.
func budgetParts(res Result, limit, left int) Result {
	meta := max(limit, minPartsAllowance)
	copied := false
	for i, p := range res.Parts {
		cost := partOverhead + len(p.Type) + len(p.MIMEType) + len(p.URI) + len(p.Name) + len(p.Description)
		if cost > meta {
			dropped := len(res.Parts) - i
			res.Parts = res.Parts[:i:i] // an append cannot write into the tool's slice
			res.Metadata = withMeta(res.Metadata, "parts_dropped", dropped)
			res.Output += fmt.Sprintf("\n[%d of the result's %d parts not shown: the result budget is spent; ask for less]", dropped, i+dropped)
			break
		}
		meta -= cost
		if p.Type != PartResource || len(p.Text) <= left {
			left -= min(len(p.Text), left)
			continue
		}
		if !copied {
			res.Parts, copied = slices.Clone(res.Parts), true
		}
		cut := runeCut(p.Text, left)
		notice := fmt.Sprintf(
			"\n[text truncated: the resource had %d bytes and only the first %d are shown; the result budget is spent]", len(p.Text), cut)
		res.Parts[i].Text = p.Text[:cut] + notice
		meta = max(meta-len(notice), 0)
		left = 0
	}
	return res
}

// partOverhead is what Result.Text writes for a part besides its fields:
// the line break, the brackets and words around them, a byte count.
const partOverhead = 32

// minPartsAllowance is the least allowance for what the parts write.
const minPartsAllowance = 4 << 10

func withMeta(m map[string]any, k string, v any) map[string]any {
	if m == nil {
		m = make(map[string]any, 1)
	}
	m[k] = v
	return m
}

// checkArgs parses and validates args for a tool with a hand-written schema
// and returns them with defaults applied.
func checkArgs(e *entry, args []byte, lim argLimits) ([]byte, error) {
	if len(args) > lim.maxBytes {
		return nil, tooLarge(e.name, args, lim.maxBytes)
	}
	if isBlank(args) {
		args = []byte("{}")
	}
	if i := jsontext.SkipSpace(args, 0); args[i] != '{' {
		got := "a JSON " + jsontext.KindName(args[i])
		if len(args) >= 3 && args[0] == 0xef && args[1] == 0xbb && args[2] == 0xbf {
			got = "a byte order mark (U+FEFF) before the value"
		}
		return nil, &ArgumentError{Tool: e.name, Args: shortenArgs(args),
			Violations: []Violation{{Expected: "a JSON object", Got: got}}}
	}
	out, vs, err := e.check.Validate(args, jsonschema.Limits{MaxBytes: lim.maxBytes, MaxDepth: lim.maxDepth})
	if errors.Is(err, jsonschema.ErrTooComplex) {
		return nil, &ArgumentError{Tool: e.name, Args: shortenArgs(args), Violations: []Violation{{
			Expected: "arguments this tool's schema can check within its work limit",
			Got:      "arguments that need more work than that",
			Hint:     "send fewer or less deeply nested values",
		}}}
	}
	if err != nil {
		return nil, &ArgumentError{Tool: e.name, Args: shortenArgs(args),
			Violations: []Violation{{Expected: "valid JSON", Got: err.Error()}}}
	}
	if len(vs) > 0 {
		ae := &ArgumentError{Tool: e.name, Args: shortenArgs(args), Violations: make([]Violation, len(vs))}
		for i, v := range vs {
			ae.Violations[i] = Violation(v)
		}
		return nil, ae
	}
	return out, nil
}

func tooLarge(name string, args []byte, limit int) error {
	return &ArgumentError{Tool: name, Args: shortenArgs(args), Violations: []Violation{{
		Expected: fmt.Sprintf("arguments of at most %d bytes", limit),
		Got:      fmt.Sprintf("%d bytes", len(args)),
		Hint:     "send less data, for example a reference to it instead of its content",
	}}}
}

func isBlank(b []byte) bool { return jsontext.SkipSpace(b, 0) == len(b) }

// shortenArgs returns args as text of at most a few hundred bytes, for
// echoing back to the model on one line: invalid UTF-8 replaced, line
// breaks and tabs as spaces, and other control and hidden characters
// escaped (see visible), so that refused arguments cannot put raw ESC, BEL
// or NUL bytes into a message.
func shortenArgs(args []byte) string {
	const limit = 300
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(string(args[:min(len(args), limit+4)]), "\uFFFD") {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' ' // JSON whitespace: keep the echo on one line
		}
		c := visible(string(r))
		if b.Len()+len(c) > limit {
			b.WriteString("…")
			break
		}
		b.WriteString(c)
	}
	return b.String()
}

// visible escapes control characters and characters that hide or reorder
// text, for messages to a model.
func visible(s string) string { return jsontext.Visible(s) }

// shorten cuts s to at most n bytes at a rune boundary, marking the cut.
func shorten(s string, n int) string { return showtext.Cut(s, n) }

func correlationID() string {
	return fmt.Sprintf("%016x", rand.Uint64())
}
