package container

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/acceptretry/acceptretrytest"
)

// A failingUnixListener's AcceptUnix fails as fail says for the n-th call
// (n from 0; nil: it returns conn), recording when each call was made.
type failingUnixListener struct {
	acceptretrytest.Script
	conn *net.UnixConn
}

func (l *failingUnixListener) AcceptUnix() (*net.UnixConn, error) {
	if err := l.Next(); err != nil {
		return nil, err
	}
	return l.conn, nil
}

func unixAcceptErr(e syscall.Errno) error { return acceptretrytest.Error("unix", e) }

// TestAcceptOneWaitsOutEMFILE: the warm call server's one connection is
// accepted after three EMFILE failures, 5, 10 and 20 ms apart on the
// test's clock. Before, the first EMFILE failed the server's start
// ("accept: too many open files") though the server was up. Control: a
// non-temporary error (EINVAL) is returned at once, after one call.
func TestAcceptOneWaitsOutEMFILE(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		want := new(net.UnixConn) // a sentinel: acceptOne does no I/O on it
		l := &failingUnixListener{conn: want, Script: acceptretrytest.Script{Fail: func(n int) error {
			if n < 3 {
				return unixAcceptErr(syscall.EMFILE)
			}
			return nil
		}}}
		start := time.Now()
		c, err := acceptOne(l, make(chan struct{}))
		if err != nil || c != want {
			t.Fatalf("acceptOne after 3 EMFILE = %v, %v; want the connection", c, err)
		}
		if d := time.Since(start); d != 35*time.Millisecond {
			t.Errorf("accepted after %v, want 35ms (5+10+20)", d)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		l := &failingUnixListener{Script: acceptretrytest.Script{Fail: func(int) error { return unixAcceptErr(syscall.EINVAL) }}}
		if _, err := acceptOne(l, make(chan struct{})); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("control: acceptOne on EINVAL = %v, want it", err)
		}
		if n := l.Count(); n != 1 {
			t.Errorf("control: %d AcceptUnix calls on EINVAL, want 1", n)
		}
	})
}

// TestAcceptOneStop: under EMFILE for ever, acceptOne neither returns nor
// spins (ten calls in 2.5 s), and closing stop in a 1 s delay ends it at
// that instant with net.ErrClosed, as closing the listener would (start's
// timeout, the server's exit, the caller's context).
func TestAcceptOneStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &failingUnixListener{Script: acceptretrytest.Script{Fail: func(int) error { return unixAcceptErr(syscall.EMFILE) }}}
		stop := make(chan struct{})
		type result struct {
			err error
			at  time.Time
		}
		res := make(chan result, 1)
		go func() {
			_, err := acceptOne(l, stop)
			res <- result{err, time.Now()}
		}()
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		if n := l.Count(); n != 10 {
			t.Errorf("%d AcceptUnix calls in 2.5s of EMFILE, want 10", n)
		}
		closed := time.Now()
		close(stop)
		r := <-res
		if !errors.Is(r.err, net.ErrClosed) {
			t.Errorf("acceptOne after stop = %v, want net.ErrClosed", r.err)
		}
		if d := r.at.Sub(closed); d != 0 {
			t.Errorf("acceptOne returned %v after stop, want at once", d)
		}
	})
}
