package natstool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool"
)

// The service's one expiry timer ends each call at its caller's
// deadline, in deadline order whatever the order of arrival, and never
// ends a call that left the queue first (as a call that finished leaves
// it); the timer is reset only for a call due before it fires.
func TestServiceExpiresCallsAtTheirDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Service{}
		start := time.Now()
		newCall := func(after time.Duration) *call {
			c := &call{s: s}
			c.deadline.At = start.Add(after)
			c.Context, c.cancel = context.WithCancelCause(context.Background())
			s.mu.Lock()
			s.schedule(c)
			s.mu.Unlock()
			return c
		}
		late := newCall(30 * time.Millisecond)
		early := newCall(10 * time.Millisecond)
		finished := newCall(20 * time.Millisecond)
		again := newCall(10 * time.Millisecond) // the same deadline as early
		defer func() {
			for _, c := range []*call{late, early, finished, again} {
				c.cancel(errCallDone)
			}
		}()
		s.mu.Lock()
		s.deadlines.Remove(finished)
		s.mu.Unlock()

		if d, ok := late.Deadline(); !ok || !d.Equal(start.Add(30*time.Millisecond)) {
			t.Errorf("Deadline() = %v, %v", d, ok)
		}
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		for _, c := range []*call{early, again} {
			if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(c), tool.ErrTimeout) {
				t.Errorf("at 15 ms, a call due at 10 ms: Err %v, cause %v", c.Err(), context.Cause(c))
			}
		}
		if late.Err() != nil || finished.Err() != nil {
			t.Errorf("at 15 ms: late %v, finished %v; want both running", late.Err(), finished.Err())
		}
		time.Sleep(25 * time.Millisecond)
		synctest.Wait()
		if !errors.Is(context.Cause(late), tool.ErrTimeout) {
			t.Errorf("at 40 ms, the call due at 30 ms: cause %v", context.Cause(late))
		}
		if finished.Err() != nil {
			t.Errorf("a call removed from the queue was ended: %v", context.Cause(finished))
		}
		s.mu.Lock()
		if n := s.deadlines.Len(); n != 0 || !s.deadlines.FiresAt().IsZero() {
			t.Errorf("%d calls left in the queue, timer set for %v", n, s.deadlines.FiresAt())
		}
		s.mu.Unlock()

		// Calls one after another: the timer set for the first, which
		// finished, is not reset for the second, due later; it fires for
		// nothing, then sets itself for the second's deadline.
		start = time.Now()
		first := newCall(10 * time.Millisecond)
		s.mu.Lock()
		s.deadlines.Remove(first)
		s.mu.Unlock()
		second := newCall(20 * time.Millisecond)
		defer first.cancel(errCallDone)
		defer second.cancel(errCallDone)
		s.mu.Lock()
		if !s.deadlines.FiresAt().Equal(start.Add(10 * time.Millisecond)) {
			t.Errorf("the timer is set for %v, want still the first call's deadline", s.deadlines.FiresAt().Sub(start))
		}
		s.mu.Unlock()
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		s.mu.Lock()
		if first.Err() != nil || second.Err() != nil || !s.deadlines.FiresAt().Equal(start.Add(20*time.Millisecond)) {
			t.Errorf("at 15 ms: first %v, second %v, timer at %v; want both running, the timer at 20 ms", first.Err(), second.Err(), s.deadlines.FiresAt().Sub(start))
		}
		s.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if !errors.Is(context.Cause(second), tool.ErrTimeout) {
			t.Errorf("at 25 ms, the call due at 20 ms: cause %v", context.Cause(second))
		}
		s.mu.Lock()
		s.deadlines.Stop()
		s.mu.Unlock()
	})
}

// A call canceled for another reason keeps its cause: Err is Canceled,
// not DeadlineExceeded.
func TestCallErrKeepsOtherCauses(t *testing.T) {
	c := &call{}
	c.deadline.At = time.Now().Add(time.Hour)
	c.Context, c.cancel = context.WithCancelCause(context.Background())
	c.cancel(errCallerCanceled)
	if !errors.Is(c.Err(), context.Canceled) || context.Cause(c) != errCallerCanceled {
		t.Errorf("Err %v, cause %v", c.Err(), context.Cause(c))
	}
}
