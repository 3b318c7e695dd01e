// Package deadline keeps items ordered by their deadline, earliest first,
// for code that runs one timer for many of them: a binary heap that knows
// where each item is, so that an item that leaves before its deadline is
// removed in O(log n), and no item costs a timer of its own.
package deadline

import "time"

// A Slot is an item's deadline and its place in a [Queue]. An item holds
// one and returns it from its DeadlineSlot method.
type Slot struct {
	// At is the deadline. It is set before the item is pushed and left
	// alone while the item is queued.
	At  time.Time
	pos int // index in the queue plus one; zero when not queued
}

// Queued reports whether the item is in a queue.
func (s *Slot) Queued() bool { return s.pos > 0 }

// An Item is what a [Queue] holds: a pointer whose DeadlineSlot returns
// the same Slot every time.
type Item interface{ DeadlineSlot() *Slot }

// A Queue holds items by deadline, earliest first. The zero value is an
// empty queue. A Queue is not safe for concurrent use; an item is in at
// most one queue at a time.
type Queue[T Item] struct {
	items []T
}

// Len returns the number of items queued.
func (q *Queue[T]) Len() int { return len(q.items) }

// First returns the item with the earliest deadline; ok is false when the
// queue is empty.
func (q *Queue[T]) First() (first T, ok bool) {
	if len(q.items) == 0 {
		return first, false
	}
	return q.items[0], true
}

// Push adds x, which must not be queued.
func (q *Queue[T]) Push(x T) {
	q.items = append(q.items, x)
	i := len(q.items) - 1
	x.DeadlineSlot().pos = i + 1
	q.up(i)
}

// PopFirst removes and returns the item with the earliest deadline; the
// queue must not be empty.
func (q *Queue[T]) PopFirst() T {
	first := q.items[0]
	q.removeAt(0)
	return first
}

// Remove takes x out of the queue; it does nothing when x is not queued.
func (q *Queue[T]) Remove(x T) {
	if s := x.DeadlineSlot(); s.pos > 0 {
		q.removeAt(s.pos - 1)
	}
}

func (q *Queue[T]) removeAt(i int) {
	last := len(q.items) - 1
	gone := q.items[i]
	if i != last {
		q.swap(i, last)
	}
	var zero T
	q.items[last] = zero
	q.items = q.items[:last]
	gone.DeadlineSlot().pos = 0
	if i != last {
		if !q.down(i) {
			q.up(i)
		}
	}
}

func (q *Queue[T]) less(i, j int) bool {
	return q.items[i].DeadlineSlot().At.Before(q.items[j].DeadlineSlot().At)
}

func (q *Queue[T]) swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].DeadlineSlot().pos = i + 1
	q.items[j].DeadlineSlot().pos = j + 1
}

func (q *Queue[T]) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			return
		}
		q.swap(i, parent)
		i = parent
	}
}

// down moves item i down to its place and reports whether it moved.
func (q *Queue[T]) down(i int) bool {
	start := i
	n := len(q.items)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && q.less(right, child) {
			child = right
		}
		if !q.less(child, i) {
			break
		}
		q.swap(i, child)
		i = child
	}
	return i > start
}

// A Timer is a Queue with one [time.Timer] that fires no later than the
// earliest deadline queued. It is set when an item due before it fires is
// added, and not touched when an item leaves: when it fires with nothing
// due, the owner's Due sets it for the next deadline. So items added and
// removed one after another, each due after the last, cost no timer
// operation at all. The zero value is ready; a Timer is not safe for
// concurrent use (its owner holds a lock around every call, and takes the
// same lock in the function the timer runs).
type Timer[T Item] struct {
	Queue[T]
	// Fire is what the timer runs, in a goroutine of its own; it should
	// take the owner's lock and call Due. It is set before the first Add.
	Fire  func()
	timer *time.Timer
	at    time.Time // when timer fires; zero when it is not set
}

// Add queues x and sets the timer for x's deadline when the timer would
// fire later or is not set.
func (t *Timer[T]) Add(x T) {
	t.Push(x)
	at := x.DeadlineSlot().At
	if !t.at.IsZero() && !at.Before(t.at) {
		return
	}
	t.at = at
	if t.timer == nil {
		t.timer = time.AfterFunc(time.Until(at), t.Fire)
	} else {
		t.timer.Reset(time.Until(at))
	}
}

// Due removes the items whose deadline is not after now, earliest first,
// appends them to dst and returns it, and sets the timer for the next
// deadline, or leaves it unset when the queue is empty.
func (t *Timer[T]) Due(now time.Time, dst []T) []T {
	t.at = time.Time{}
	for t.Len() > 0 {
		first, _ := t.First()
		if at := first.DeadlineSlot().At; at.After(now) {
			t.at = at
			t.timer.Reset(at.Sub(now))
			break
		}
		dst = append(dst, t.PopFirst())
	}
	return dst
}

// FiresAt returns when the timer fires; zero when it is not set.
func (t *Timer[T]) FiresAt() time.Time { return t.at }

// Stop stops the timer, if it was made.
func (t *Timer[T]) Stop() {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.at = time.Time{}
}
