package tool

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A limiter ends calls of tools with [Options.SharedTimer] at their time
// limit, with one timer for the registry: the timer fires no later than
// the earliest limit of the calls running, and is reset only for a call
// due before it fires. Calls made one after another, each gone before
// the next comes, cost no timer operation at all; a context.WithTimeout
// per call costs a timer started and stopped.
type limiter struct {
	mu    sync.Mutex
	calls limitQueue  // earliest limit first
	timer *time.Timer // nil until the first call
	at    time.Time   // when timer fires; zero when it is not set
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
	limit    time.Time   // the call's own limit; zero when the caller's deadline comes first
	expired  atomic.Bool // the limiter ended the call
	slot     int         // in limiter.calls; -1 when not there; guarded by limiter.mu
}

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
	c := &limitCtx{slot: -1}
	c.Context, c.cancel = context.WithCancelCause(parent)
	c.deadline = time.Now().Add(timeout)
	if d, ok := parent.Deadline(); ok && !d.After(c.deadline) {
		c.deadline = d // the caller's deadline ends the call first
		return c
	}
	c.limit = c.deadline
	l.mu.Lock()
	heap.Push(&l.calls, c)
	if l.at.IsZero() || c.limit.Before(l.at) {
		l.at = c.limit
		if l.timer == nil {
			l.timer = time.AfterFunc(time.Until(c.limit), l.expire)
		} else {
			l.timer.Reset(time.Until(c.limit))
		}
	}
	l.mu.Unlock()
	return c
}

// done ends a call: it leaves the queue and its context is canceled.
func (l *limiter) done(c *limitCtx) {
	if !c.limit.IsZero() {
		l.mu.Lock()
		if c.slot >= 0 {
			// The timer stays set: when it fires with nothing due, it sets
			// itself for the next limit.
			heap.Remove(&l.calls, c.slot)
		}
		l.mu.Unlock()
	}
	c.cancel(context.Canceled)
}

// expire ends the calls whose limit has passed and sets the timer for
// the next limit.
func (l *limiter) expire() {
	var due []*limitCtx
	l.mu.Lock()
	now := time.Now()
	l.at = time.Time{}
	for len(l.calls) > 0 {
		c := l.calls[0]
		if c.limit.After(now) {
			l.at = c.limit
			l.timer.Reset(c.limit.Sub(now))
			break
		}
		heap.Pop(&l.calls)
		c.expired.Store(true)
		due = append(due, c)
	}
	l.mu.Unlock()
	for _, c := range due {
		c.cancel(ErrTimeout)
	}
}

// limitQueue holds calls by their limit, earliest first
// (container/heap).
type limitQueue []*limitCtx

func (q limitQueue) Len() int           { return len(q) }
func (q limitQueue) Less(i, j int) bool { return q[i].limit.Before(q[j].limit) }
func (q limitQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].slot, q[j].slot = i, j
}
func (q *limitQueue) Push(x any) {
	c := x.(*limitCtx)
	c.slot = len(*q)
	*q = append(*q, c)
}
func (q *limitQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	c.slot = -1
	return c
}
