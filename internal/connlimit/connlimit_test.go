package connlimit

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// held opens n connections to addr and returns them.
func held(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return cs
}

// closedByServer reports whether the server closes c within d (reading
// gets EOF or a reset rather than the deadline).
func closedByServer(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// serve accepts from l for ever, holding every connection it gets.
func serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_ = c // held open until the client closes
	}
}

// TestPerHost: a client opening connections past the per-host bound gets
// each closed at once, and one within it stays open. Control: without a
// bound, every connection stays open.
func TestPerHost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perHost int
		refused bool
	}{
		{"bounded", 4, true},
		{"control: no bound", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			l := New(inner, 0, tc.perHost)
			defer l.Close()
			go serve(l)
			cs := held(t, inner.Addr().String(), 4)
			extra := held(t, inner.Addr().String(), 1)[0]
			if got := closedByServer(extra, 2*time.Second); got != tc.refused {
				t.Errorf("the fifth connection closed by the server: %v, want %v", got, tc.refused)
			}
			if closedByServer(cs[0], 100*time.Millisecond) {
				t.Error("a connection within the bound was closed")
			}
			if !tc.refused {
				return
			}
			for deadline := time.Now().Add(10 * time.Second); l.Open() != 4; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d open, want 4", l.Open())
				}
			}
		})
	}
}

// TestTotalAndRelease: the total bound counts every host, and Close gives
// a place back once, however often it is called.
func TestTotalAndRelease(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(inner, 2, 0)
	defer l.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	cs := held(t, inner.Addr().String(), 3)
	a, b := <-accepted, <-accepted
	if !closedByServer(cs[2], 2*time.Second) {
		t.Error("the third connection was kept past a total of 2")
	}
	a.Close()
	a.Close()
	if l.Open() != 1 {
		t.Errorf("%d open after one Close (twice), want 1", l.Open())
	}
	held(t, inner.Addr().String(), 1)
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Error("a freed place was not taken again")
	}
	b.Close()
	if l.Open() != 0 {
		t.Errorf("%d open, want 0", l.Open())
	}
}
