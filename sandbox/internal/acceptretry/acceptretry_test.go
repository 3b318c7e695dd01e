package acceptretry

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestTemporary: the five errno values are temporary however Accept wraps
// them (a *net.OpError around an *os.SyscallError, as the net package
// returns them); the controls, a closed listener and other errno values,
// are not.
func TestTemporary(t *testing.T) {
	wrap := func(e error) error {
		return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", e)}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{wrap(syscall.EMFILE), true},
		{wrap(syscall.ENFILE), true},
		{wrap(syscall.ENOBUFS), true},
		{wrap(syscall.ENOMEM), true},
		{wrap(syscall.ECONNABORTED), true},
		{syscall.EMFILE, true},
		{fmt.Errorf("serving: %w", wrap(syscall.EMFILE)), true},
		// Controls.
		{nil, false},
		{net.ErrClosed, false},
		{&net.OpError{Op: "accept", Net: "tcp", Err: net.ErrClosed}, false},
		{wrap(syscall.EBADF), false},
		{wrap(syscall.EINVAL), false},
		{wrap(syscall.ENOTSOCK), false},
		{io.EOF, false},
		{errors.New("too many open files"), false}, // the text is not the errno
	} {
		if got := Temporary(tc.err); got != tc.want {
			t.Errorf("Temporary(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestBackoffDelays: 5 ms doubling to 1 s, Reset starts over, and Wait
// waits exactly the delay on the test's clock (synctest, no wall clock).
func TestBackoffDelays(t *testing.T) {
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000}
	synctest.Test(t, func(t *testing.T) {
		var b Backoff
		for i, w := range want {
			start := time.Now()
			if !b.Wait(nil) {
				t.Fatalf("Wait %d returned false with no done channel", i)
			}
			if got := time.Since(start); got != w*time.Millisecond {
				t.Errorf("delay %d = %v, want %v", i, got, w*time.Millisecond)
			}
		}
		b.Reset()
		if got := b.Next(); got != First {
			t.Errorf("after Reset, Next = %v, want %v", got, First)
		}
	})
}

// TestBackoffWaitDone: closing done ends a Wait at once, in the middle of
// a 1 s delay; the control is the same Wait left alone, which takes the
// whole delay.
func TestBackoffWaitDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Backoff{d: Max}
		done := make(chan struct{})
		start := time.Now()
		res := make(chan bool)
		go func() { res <- b.Wait(done) }()
		time.Sleep(300 * time.Millisecond)
		close(done)
		if <-res {
			t.Error("Wait reported the delay passed after done was closed")
		}
		if got := time.Since(start); got != 300*time.Millisecond {
			t.Errorf("Wait ended %v after it began, want at the close (300ms)", got)
		}

		// Control: without the close the whole delay passes.
		start = time.Now()
		if !b.Wait(make(chan struct{})) {
			t.Error("control: Wait returned false with done open")
		}
		if got := time.Since(start); got != Max {
			t.Errorf("control: Wait took %v, want %v", got, Max)
		}
	})
}
