// Package outcome holds what every sandbox backend shares to report a run:
// the output budget a run's stdout and stderr write into together, and the
// classification of how the run ended. The outcome names are those of
// sandbox.Outcome, which this package cannot import (sandbox imports it).
package outcome

import "sync"

// The outcome names, as sandbox.Outcome spells them.
const (
	Exited      = "exited"
	Signaled    = "signaled"
	CPULimit    = "cpu_limit"
	MemoryLimit = "memory_limit"
	PIDsLimit   = "pids_limit"
)

// A Budget is shared by a run's stdout and stderr: together they keep at
// most the limit given to [NewBudget], and the first write past it calls
// the function given to OnOverflow, once. A Budget is safe for concurrent
// use by its streams.
type Budget struct {
	mu       sync.Mutex
	left     int
	over     bool
	overflow func()
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int) *Budget { return &Budget{left: limit} }

// OnOverflow sets the function the first write past the budget calls (it
// is called once, outside the budget's lock).
func (b *Budget) OnOverflow(f func()) {
	b.mu.Lock()
	b.overflow = f
	b.mu.Unlock()
}

// Stream returns a new stream writing into b.
func (b *Budget) Stream() *Stream { return &Stream{b: b} }

// Exceeded reports whether a write went past the budget.
func (b *Budget) Exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

// A Stream is one output stream writing into a [Budget].
type Stream struct {
	b   *Budget
	buf []byte
}

// Write keeps what fits in the budget and reports success for all of p, so
// that the copying goroutine keeps draining the pipe until the run dies.
func (c *Stream) Write(p []byte) (int, error) {
	c.b.mu.Lock()
	keep := min(len(p), c.b.left)
	c.buf = append(c.buf, p[:keep]...)
	c.b.left -= keep
	fire := keep < len(p) && !c.b.over
	if fire {
		c.b.over = true
	}
	overflow := c.b.overflow
	c.b.mu.Unlock()
	if fire && overflow != nil {
		overflow()
	}
	return len(p), nil
}

// Bytes returns what the stream kept. The caller must not write to the
// stream while it uses the slice.
func (c *Stream) Bytes() []byte {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	return c.buf
}
