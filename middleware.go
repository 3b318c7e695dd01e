package tool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"time"
)

// A Step runs one call of a batch and returns the Result the model sees
// and the Go error behind a failed Result (nil on success); they become the
// call's [Outcome].
//
// The Call a Step receives is final: references to other calls' outputs
// in Args have been substituted, and DependsOn lists every call it waited
// for, including those its references added. A Step that returns a
// non-nil error should return a Result with IsError set; the [Executor]
// fills in a missing message or kind.
type Step func(ctx context.Context, c Call) (Result, error)

// A Middleware wraps the execution of each call, in the style of net/http
// middleware: it takes the next Step and returns a Step that may act
// before and after calling it, change the Call, replace the Result, or not
// call next at all.
//
// The executor's own features are built the same way. For each call an
// [Executor] runs, outermost first: the middleware given with
// [WithMiddleware], in order; the [Hooks] given with [WithHooks]; retries
// (see [RetryPolicy]); and finally the [Registry]'s safe execution path,
// which parses and validates the arguments, applies the tool's time limit,
// recovers panics and applies the result budget. Concurrency limits are
// not middleware: they decide when a call starts, and a Step that waited
// for a slot would hold a goroutine and a parallelism slot while waiting.
type Middleware func(next Step) Step

// A BatchStep runs a whole batch. It must return one Outcome per call, in
// input order.
type BatchStep func(ctx context.Context, calls []Call) ([]Outcome, error)

// A BatchMiddleware wraps [Executor.Run], for example to open a trace span
// around a batch. The context it passes to next is the parent of every
// call's context.
type BatchMiddleware func(next BatchStep) BatchStep

// Hooks are called around each call an [Executor] runs; they are where
// approval and audit plug in. Either field may be nil.
type Hooks struct {
	// Before is called before the call runs, with its final arguments.
	// A non-nil error refuses the call: the tool does not run, the model
	// sees a [KindDenied] result carrying the error's message, and the
	// Outcome's Err wraps both [ErrDenied] and the error.
	Before func(ctx context.Context, c Call) error

	// After is called with the call's Outcome once the call is over,
	// retries included, whether Before allowed it or not. Calls that never
	// started (skipped because a dependency failed, or canceled before they
	// started) have no hooks called; [Executor.Run]'s outcomes list them.
	After func(ctx context.Context, c Call, o Outcome)
}

func hooksMiddleware(h Hooks) Middleware {
	return func(next Step) Step {
		return func(ctx context.Context, c Call) (Result, error) {
			var res Result
			var err error
			if h.Before != nil {
				if berr := h.Before(ctx, c); berr != nil {
					res = errorResult(KindDenied, fmt.Sprintf("call to tool %q was refused: %v", c.Name, berr))
					err = berr
					if !errors.Is(err, ErrDenied) {
						err = fmt.Errorf("%w: %w", ErrDenied, berr)
					}
					if h.After != nil {
						h.After(ctx, c, Outcome{ID: c.ID, Result: res, Err: err})
					}
					return res, err
				}
			}
			res, err = next(ctx, c)
			if h.After != nil {
				res, err = normalize(c, res, err)
				h.After(ctx, c, Outcome{ID: c.ID, Result: res, Err: err})
			}
			return res, err
		}
	}
}

// ErrTransient marks an error that may go away if the call is tried
// again, such as a rate limit or a dropped connection. Mark an error with
// [Transient]; test for it with errors.Is(err, ErrTransient).
var ErrTransient = errors.New("transient error")

// Transient returns an error that reads and unwraps like err and also
// matches [ErrTransient], so that an [Executor] may retry the call (see
// [RetryPolicy]). A tool returns it from Execute, for example
//
//	return tool.Result{}, tool.Transient(fmt.Errorf("search backend: %w", err))
//
// Transient(nil) returns nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

type transientError struct{ err error }

func (e transientError) Error() string   { return e.err.Error() }
func (e transientError) Unwrap() []error { return []error{e.err, ErrTransient} }

// Defaults of a [RetryPolicy] whose fields are zero.
const (
	DefaultRetryBackoff    = 100 * time.Millisecond
	DefaultRetryMaxBackoff = 5 * time.Second
)

// A RetryPolicy says how an [Executor] retries a tool's failed calls. It
// applies only to tools whose Annotations say they are Idempotent, and
// only to failures whose error matches [ErrTransient]; any other failure,
// a timeout, or the end of the caller's context ends the call at once.
//
// All attempts together are bounded by the call's time limit (the tool's
// [Options.Timeout], else the registry's default): a wait that would run
// past it is not started, and an attempt cut short by it is reported as a
// timeout. Result.Metadata["attempts"] (an int) says how many attempts
// were made, whenever the policy applies.
type RetryPolicy struct {
	// MaxAttempts is how many times a call may run in all, the first time
	// included. Zero or one means no retries.
	MaxAttempts int

	// Backoff is the wait before the second attempt; it doubles before
	// each later attempt, up to MaxBackoff. Each wait is jittered: a
	// random duration between half of it and all of it, so that calls
	// that failed together do not retry together. Zero means
	// [DefaultRetryBackoff].
	Backoff time.Duration

	// MaxBackoff caps one wait. Zero means [DefaultRetryMaxBackoff].
	MaxBackoff time.Duration
}

// WithRetry sets [Options.Retry], the tool's retry policy in an
// [Executor]. It has no effect unless the tool is also annotated as
// Idempotent (see [WithAnnotations]).
func WithRetry(p RetryPolicy) Option {
	return func(o *Options) { o.Retry = p }
}

// WithMaxInFlight sets [Options.MaxInFlight]: an [Executor] runs at most n
// calls of the tool at once. A negative n removes the limit, including the
// default of one for destructive tools.
func WithMaxInFlight(n int) Option {
	return func(o *Options) { o.MaxInFlight = n }
}

// WithSequential sets [Options.Sequential]: an [Executor] runs each call of
// the tool alone, in the order the calls were emitted.
func WithSequential() Option {
	return func(o *Options) { o.Sequential = true }
}

// wait returns the jittered wait before attempt n+1 (n ≥ 1).
func (p RetryPolicy) wait(n int) time.Duration {
	base, limit := p.Backoff, p.MaxBackoff
	if base <= 0 {
		base = DefaultRetryBackoff
	}
	if limit <= 0 {
		limit = DefaultRetryMaxBackoff
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2+1)
}

// callRetrying is the executor's innermost step: it runs the call through
// the registry's safe path, and retries calls of idempotent tools that
// fail with a transient error, as their RetryPolicy says (each attempt
// through [Registry.call], which looks the tool up again). A call that is
// not retried, which is most, is looked up once.
func (e *Executor) callRetrying(ctx context.Context, c Call) (Result, error) {
	en := e.reg.lookup(c.Name)
	if en == nil {
		return e.reg.notFound(c.Name)
	}
	if en.opts.Retry.MaxAttempts <= 1 || !en.opts.Annotations.Idempotent {
		return e.reg.run(ctx, en, c.Args, nil)
	}
	next := e.reg.call0
	p := en.opts.Retry
	timeout := e.reg.timeoutOf(en.opts)
	rctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeoutCause(ctx, timeout, ErrTimeout)
		defer cancel()
	}
	var (
		res Result
		err error
		n   int
	)
	for n = 1; ; n++ {
		res, err = next(rctx, c)
		if err == nil || n == p.MaxAttempts || !errors.Is(err, ErrTransient) || rctx.Err() != nil {
			break
		}
		wait := p.wait(n)
		if dl, ok := rctx.Deadline(); ok && time.Until(dl) <= wait {
			break // the next attempt could not start before the time limit
		}
		if !sleep(rctx, wait) {
			break
		}
	}
	if ctx.Err() == nil && rctx.Err() != nil && errors.Is(context.Cause(rctx), ErrTimeout) && (err != nil || res.IsError) {
		// The last attempt was cut short by the limit on all attempts.
		msg := fmt.Sprintf("tool %q timed out after %s (%d attempts); try a smaller or simpler request", c.Name, timeout, n)
		res = Result{Error: msg, IsError: true, Kind: KindTimeout, Metadata: res.Metadata}
		terr := fmt.Errorf("tool %q: %w after %s (%d attempts)", c.Name, ErrTimeout, timeout, n)
		if errors.Is(err, ErrIgnoredContext) {
			terr = errors.Join(terr, fmt.Errorf("tool %q: %w", c.Name, ErrIgnoredContext))
		}
		err = terr
	}
	res.Metadata = maps.Clone(res.Metadata)
	res.Metadata = withMeta(res.Metadata, "attempts", n)
	return res, err
}

// normalize makes a Step's return values a well-formed outcome: a failed
// Result has a message and a kind, and has an error behind it.
func normalize(c Call, res Result, err error) (Result, error) {
	normalizeIn(c.Name, &res, &err)
	return res, err
}

// normalizeIn is normalize in place, for a call to the tool name: the
// executor's outcomes are large, and a successful one is left untouched.
func normalizeIn(name string, res *Result, err *error) {
	if *err != nil && !res.IsError {
		*res = Result{Error: (*err).Error(), IsError: true, Kind: KindToolError, Metadata: res.Metadata}
	}
	if res.IsError {
		if res.Kind == "" {
			res.Kind = KindToolError
		}
		if res.Error == "" {
			res.Error = fmt.Sprintf("tool %q failed without a message", name)
		}
		if *err == nil {
			*err = toolFailure{msg: res.Error}
		}
	}
}

// sleep waits for d and reports whether it did before ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
