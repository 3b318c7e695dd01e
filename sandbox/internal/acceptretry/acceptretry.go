// Package acceptretry is what the sandbox's accept loops (the allow-list
// proxy outside the sandbox, the network forwarder inside a container) do
// when Accept fails: a shortage that passes (descriptors, buffers, memory)
// or a client that gave up is waited out with a growing delay, as
// net/http's Server.Serve does; anything else ends the loop.
//
// Without it a transient descriptor shortage on a busy supervisor ended
// the proxy for good, and with it the confined run's network.
package acceptretry

import (
	"errors"
	"syscall"
	"time"
)

// The delays between attempts: the first after a temporary error, then
// doubled up to the last.
const (
	First = 5 * time.Millisecond
	Max   = time.Second
)

// temporary are the errno values of accept(2) that say nothing about the
// listener itself.
var temporary = [...]syscall.Errno{
	syscall.EMFILE,       // this process is out of descriptors
	syscall.ENFILE,       // the system is
	syscall.ENOBUFS,      // out of socket buffers
	syscall.ENOMEM,       // out of memory
	syscall.ECONNABORTED, // the client gave up before it was accepted
}

// Temporary reports whether err, returned by a listener's Accept, is one
// an accept loop outlives: EMFILE, ENFILE, ENOBUFS, ENOMEM or
// ECONNABORTED, however wrapped. Every other error, [net.ErrClosed]
// included, is not.
func Temporary(err error) bool {
	for _, e := range temporary {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// A Backoff is the delay before the next Accept after consecutive
// temporary errors: [First], then doubled each time up to [Max]. The zero
// value is ready; it is not safe for concurrent use.
type Backoff struct {
	d time.Duration
}

// Next returns the delay to wait before the next attempt and grows the
// one after.
func (b *Backoff) Next() time.Duration {
	if b.d == 0 {
		b.d = First
	} else {
		b.d = min(2*b.d, Max)
	}
	return b.d
}

// Reset starts the delays over at [First]; an accept loop calls it when
// Accept succeeds.
func (b *Backoff) Reset() { b.d = 0 }

// Wait waits the next delay (see [Backoff.Next]) or until done is closed,
// whichever comes first, and reports whether the delay passed (false:
// done was closed). A nil done is never closed.
func (b *Backoff) Wait(done <-chan struct{}) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
