package tool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miniopenclaw/tool/internal/deadline"
)

// A limiter ends calls of tools with [Options.SharedTimer] at their time
// limit, with one timer for the registry: the timer fires no later than
// the earliest limit of the calls running, and is reset only for a call
// due before it fires. Calls made one after another, each gone before
// the next comes, cost no timer operation at all; a context.WithTimeout
// per call costs a timer started and stopped.
type limiter struct {
	mu    sync.Mutex
	calls deadline.Timer[*limitCtx] // by limit, earliest first
}

// A limitCtx is the context of a call with a shared timer: a cancelable
// child of the caller's context that reports the time limit as its
// deadline and, once the limiter ended it, context.DeadlineExceeded as
// its error, as a context made by context.WithDeadlineCause would.
// Contexts derived from it see context.Canceled then, with its cause.
type limitCtx struct {
	context.Context
	cancel   context.CancelCauseFunc
	deadline time.Time
	// limit.At is the call's own limit, zero when the caller's deadline
	// comes first; its place in limiter.calls is guarded by limiter.mu.
	limit   deadline.Slot
	expired atomic.Bool // the limiter ended the call
}

// DeadlineSlot returns the call's place in the limiter's queue.
func (c *limitCtx) DeadlineSlot() *deadline.Slot { return &c.limit }

// Deadline returns the earlier of the time limit and the caller's
// deadline.
func (c *limitCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Err returns [context.DeadlineExceeded] once the time limit has ended the
// call, as context.WithDeadline would.
func (c *limitCtx) Err() error {
	err := c.Context.Err()
	if err != nil && c.expired.Load() && context.Cause(c.Context) == ErrTimeout {
		return context.DeadlineExceeded
	}
	return err
}

// start returns the context of a call limited to timeout from now, with
// cause [ErrTimeout] when the limit ends it. The caller calls done when
// the call is over.
func (l *limiter) start(parent context.Context, timeout time.Duration) *limitCtx {
	c := &limitCtx{}
	c.Context, c.cancel = context.WithCancelCause(parent)
	c.deadline = time.Now().Add(timeout)
	if d, ok := parent.Deadline(); ok && !d.After(c.deadline) {
		c.deadline = d // the caller's deadline ends the call first
		return c
	}
	c.limit.At = c.deadline
	l.mu.Lock()
	if l.calls.Fire == nil {
		l.calls.Fire = l.expire
	}
	l.calls.Add(c)
	l.mu.Unlock()
	return c
}

// done ends a call: it leaves the queue and its context is canceled.
func (l *limiter) done(c *limitCtx) {
	if !c.limit.At.IsZero() {
		l.mu.Lock()
		// The timer stays set: when it fires with nothing due, it sets
		// itself for the next limit.
		l.calls.Remove(c)
		l.mu.Unlock()
	}
	c.cancel(context.Canceled)
}

// expire ends the calls whose limit has passed and sets the timer for
// the next limit.
func (l *limiter) expire() {
	l.mu.Lock()
	due := l.calls.Due(time.Now(), nil)
	for _, c := range due {
		c.expired.Store(true)
	}
	l.mu.Unlock()
	for _, c := range due {
		c.cancel(ErrTimeout)
	}
}
