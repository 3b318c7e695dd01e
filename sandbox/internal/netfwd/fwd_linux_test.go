package netfwd

import (
	"io"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/miniopenclaw/tool/sandbox/internal/acceptretry/acceptretrytest"
)

// A failingListener's Accept fails as fail says for the n-th call (n from
// 0; nil: no failure) and otherwise passes on to next, or, with no next,
// waits until it is closed. It records when each Accept was called.
type failingListener struct {
	acceptretrytest.Script
	next net.Listener
	done chan struct{}
	once sync.Once
}

func newFailingListener(next net.Listener, fail func(n int) error) *failingListener {
	return &failingListener{Script: acceptretrytest.Script{Fail: fail}, next: next, done: make(chan struct{})}
}

func (l *failingListener) Accept() (net.Conn, error) {
	select {
	case <-l.done:
		return nil, net.ErrClosed
	default:
	}
	if err := l.Next(); err != nil {
		return nil, err
	}
	if l.next != nil {
		return l.next.Accept()
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *failingListener) Close() error {
	l.once.Do(func() { close(l.done) })
	if l.next != nil {
		return l.next.Close()
	}
	return nil
}

func (l *failingListener) Addr() net.Addr {
	if l.next != nil {
		return l.next.Addr()
	}
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3128}
}

func acceptErr(e syscall.Errno) error { return acceptretrytest.Error("tcp", e) }

// TestServeBacksOff: Accept fails with EMFILE for ever; serve neither ends
// nor spins (ten attempts in 2.5 s of the test's clock: 5 ms doubling to
// 1 s between them) and ends when the listener is closed. Before, it
// ended at the first EMFILE, and with it the container's only way out.
// Control: a non-temporary error (EINVAL) ends serve after one Accept.
func TestServeBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFailingListener(nil, func(int) error { return acceptErr(syscall.EMFILE) })
		ended := make(chan struct{})
		go func() { serve(l, "/nonexistent"); close(ended) }()
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		select {
		case <-ended:
			t.Fatal("serve ended on EMFILE")
		default:
		}
		ms := time.Millisecond
		want := []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second}
		if got := l.Gaps(); !slices.Equal(got, want) {
			t.Errorf("delays between Accept calls = %v, want %v", got, want)
		}
		l.Close()
		<-ended // at the end of the delay under way: Accept then says closed
	})

	synctest.Test(t, func(t *testing.T) {
		l := newFailingListener(nil, func(int) error { return acceptErr(syscall.EINVAL) })
		serve(l, "/nonexistent")
		if n := len(l.Gaps()) + 1; n != 1 {
			t.Errorf("control: serve called Accept %d times on EINVAL, want 1", n)
		}
	})
}

// TestServeJoinsAfterEMFILE: over real loopback and unix sockets, Accept
// fails with EMFILE three times, then a client's connection is joined to
// the proxy's socket (an echo server here): what the client sends comes
// back. Before, serve ended at the first EMFILE and the client's
// connection waited in the listen queue for ever.
func TestServeJoinsAfterEMFILE(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newFailingListener(tl, func(n int) error {
		if n < 3 {
			return acceptErr(syscall.EMFILE)
		}
		return nil
	})
	ended := make(chan struct{})
	go func() { serve(l, sock); close(ended) }()
	defer func() { l.Close(); <-ended }()

	c, err := net.DialTimeout("tcp", tl.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	got := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(c); got <- b }()
	select {
	case b := <-got:
		if string(b) != "ping" {
			t.Errorf("through the forwarder after 3 EMFILE: %q, want %q", b, "ping")
		}
	case <-ended:
		t.Fatal("serve ended on EMFILE")
	}
	if n := len(l.Gaps()) + 1; n < 4 {
		t.Errorf("Accept called %d times, want the 3 failures and the success", n)
	}
}
