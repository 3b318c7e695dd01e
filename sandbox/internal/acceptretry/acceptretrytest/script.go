// Package acceptretrytest scripts the failures of a listener's Accept for
// the tests of accept loops that back off with acceptretry: which call
// fails and how, and when each call was made.
package acceptretrytest

import (
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// A Script decides each call of a fake listener's Accept and records when
// it was made. Fail(n) is the error of the n-th call (n from 0), nil to
// let it go on. A Script is safe for concurrent use; its zero value with
// Fail set is ready.
type Script struct {
	Fail func(n int) error

	mu    sync.Mutex
	calls []time.Time
}

// Next records a call made now and returns what Fail says for it.
func (s *Script) Next() error {
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, time.Now())
	s.mu.Unlock()
	return s.Fail(n)
}

// Count returns how many calls were made.
func (s *Script) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// Gaps returns the time between consecutive calls, in order: one fewer
// than Count, none before the second call.
func (s *Script) Gaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var g []time.Duration
	for i := 1; i < len(s.calls); i++ {
		g = append(g, s.calls[i].Sub(s.calls[i-1]))
	}
	return g
}

// Error returns a failed accept as the net package returns it on network
// ("tcp" or "unix"): an *net.OpError over accept4's errno e.
func Error(network string, e syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: network, Err: os.NewSyscallError("accept4", e)}
}
