package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/acceptretry/acceptretrytest"
)

// A scriptedListener stands for a listener whose Accept fails as fail
// says for the n-th call (n from 0; nil: no failure), then hands out the
// connections sent on conns, until it is closed. It records when each
// Accept was called. Everything it blocks on is a channel, so it runs in a
// synctest bubble.
type scriptedListener struct {
	acceptretrytest.Script
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newScriptedListener(fail func(n int) error) *scriptedListener {
	return &scriptedListener{Script: acceptretrytest.Script{Fail: fail}, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *scriptedListener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, net.ErrClosed
	default:
	}
	if err := l.Next(); err != nil {
		return nil, err
	}
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *scriptedListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *scriptedListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128}
}

// acceptErr is a failed accept as the net package returns it.
func acceptErr(e syscall.Errno) error { return acceptretrytest.Error("tcp", e) }

// askOrigin sends a request in origin form through l to the proxy: it is
// answered 400 with no resolving nor dialing, so an answer shows the proxy
// accepted and served the connection.
// served is where Serve's end is sent: a Serve that ended fails the test
// rather than leave the connection waiting.
func askOrigin(t *testing.T, l *scriptedListener, served <-chan error) int {
	t.Helper()
	client, server := net.Pipe()
	defer client.Close()
	select {
	case l.conns <- server:
	case err := <-served:
		t.Fatalf("Serve ended before the connection was accepted: %v", err)
	}
	go fmt.Fprintf(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatalf("no answer through the proxy: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestProxyServeOutlivesAcceptErrors: Accept fails with each temporary
// errno in turn (EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED, twice
// over), then works; Serve waits 5 ms doubling to 1 s between attempts
// (the test's clock, not the wall's) and then serves the connection. A
// failure after a success starts the delays over at 5 ms. Control: a
// non-temporary error (EINVAL) ends Serve at once, returning it, as every
// accept error did before (then a transient descriptor shortage cut a
// confined run's network for good).
func TestProxyServeOutlivesAcceptErrors(t *testing.T) {
	temporary := []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED}
	synctest.Test(t, func(t *testing.T) {
		l := newScriptedListener(func(n int) error {
			switch {
			case n < 10:
				return acceptErr(temporary[n%len(temporary)])
			case n == 11:
				return acceptErr(syscall.EMFILE)
			}
			return nil
		})
		p := &Proxy{Rules: testRules()}
		served := make(chan error, 1)
		go func() { served <- p.Serve(l) }()

		if code := askOrigin(t, l, served); code != http.StatusBadRequest {
			t.Errorf("after 10 accept errors, the proxy answered %d, want 400", code)
		}
		if code := askOrigin(t, l, served); code != http.StatusBadRequest {
			t.Errorf("after one more, the proxy answered %d, want 400", code)
		}
		synctest.Wait()
		ms := time.Millisecond
		want := []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second,
			0,      // the connection's Accept follows the tenth failure's delay: gaps[9]
			5 * ms, // a failure after a success: 5 ms again
		}
		got := l.Gaps()
		if len(got) < len(want) || fmt.Sprint(got[:len(want)]) != fmt.Sprint(want) {
			t.Errorf("delays between Accept calls = %v, want %v then one more call", got, want)
		}
		select {
		case err := <-served:
			t.Fatalf("Serve ended on a temporary error: %v", err)
		default:
		}
		p.Close()
		if err := <-served; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve after Close = %v, want net.ErrClosed", err)
		}
	})

	// Control: any other error ends Serve at once with it.
	synctest.Test(t, func(t *testing.T) {
		l := newScriptedListener(func(int) error { return acceptErr(syscall.EINVAL) })
		p := &Proxy{Rules: testRules()}
		defer p.Close()
		if err := p.Serve(l); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("control: Serve on EINVAL = %v, want it", err)
		}
		if n := len(l.Gaps()) + 1; n != 1 {
			t.Errorf("control: Serve called Accept %d times on EINVAL, want 1", n)
		}
	})
}

// TestProxyCloseDuringBackoff: Accept fails with EMFILE for ever; Serve
// neither ends nor spins (ten attempts in the first 2.5 s: 0, 5, 15, 35,
// 75, 155, 315, 635, 1275, 2275 ms), and Close in the middle of a 1 s
// delay ends it at that very instant of the test's clock, not at the end
// of the delay.
func TestProxyCloseDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newScriptedListener(func(int) error { return acceptErr(syscall.EMFILE) })
		p := &Proxy{Rules: testRules()}
		served := make(chan error, 1)
		go func() { served <- p.Serve(l) }()
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		select {
		case err := <-served:
			t.Fatalf("Serve ended on EMFILE: %v", err)
		default:
		}
		if n := len(l.Gaps()) + 1; n != 10 {
			t.Errorf("Accept called %d times in 2.5s of EMFILE, want 10", n)
		}
		closed := time.Now()
		p.Close()
		if err := <-served; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve after Close = %v, want net.ErrClosed", err)
		}
		if d := time.Since(closed); d != 0 {
			t.Errorf("Serve returned %v after Close, want at once (the delay under way is abandoned)", d)
		}
	})
}
