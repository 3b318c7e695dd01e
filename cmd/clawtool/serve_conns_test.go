package main

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestServeConnectionBounds: a client opens connections to serve --http
// and sends nothing. Each held a goroutine and its buffers, and a file
// descriptor, for the header timeout; opened faster than they time out,
// they had no bound: memory and descriptors ran out for the whole
// process (its audit log, a sandbox's workspace). Past
// --max-conns-per-host, a connection is closed at once; those within
// stay. Control: with no bound (0), the one past it is held too.
func TestServeConnectionBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bound   string
		refused bool
	}{
		{"bounded", "8", true},
		{"control: no bound", "0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startHTTP(t, "--max-conns-per-host", tc.bound)
			var conns []net.Conn
			for range 9 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				conns = append(conns, c)
			}
			if got := closedWithin(conns[8], 3*time.Second); got != tc.refused {
				t.Errorf("the ninth idle connection closed by serve: %v, want %v", got, tc.refused)
			}
			if closedWithin(conns[0], 100*time.Millisecond) {
				t.Error("a connection within the bound was closed")
			}
		})
	}
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}
