//go:build linux

package callserver

import (
	"encoding/binary"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// socketPair returns the two ends of a connected unix stream socket.
func socketPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	a, b := conn(fds[0]), conn(fds[1])
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestServerRefusesHostileFrames: whatever the host end sends, the
// server's loop ends with an error naming the problem (and the server
// then kills everything and exits) or ignores the frame; it never panics
// and never runs anything for a refused frame.
func TestServerRefusesHostileFrames(t *testing.T) {
	header := func(t byte, n uint32) []byte { return binary.BigEndian.AppendUint32([]byte{t}, n) }
	for _, tc := range []struct {
		name   string
		active bool // a call with sequence number 7 is running
		send   []byte
		want   string // "" means the loop ends cleanly at EOF
	}{
		{name: "oversized frame", send: header(Stdout, MaxFrame+1), want: "payload"},
		{name: "unknown type", send: Append(nil, 'Z', Seq(1)), want: "unknown frame type"},
		{name: "server frame type from the host", send: Append(nil, Exited, Seq(1)), want: "unknown frame type"},
		{name: "run of garbage", send: Append(nil, Run, []byte{1, 2, 3}), want: "truncated"},
		{name: "run as root", send: Append(nil, Run, (&Request{Seq: 1, Dir: "/", Argv: []string{"true"}}).Encode()), want: "root"},
		{name: "kill without a sequence number", send: Append(nil, Kill, []byte{1}), want: "sequence"},
		{name: "frame cut short", send: header(Kill, 4)[:5], want: "EOF"},
		{name: "input too large", active: true, send: Append(nil, Stdin, Seq(7), make([]byte, Chunk+1)), want: "bytes of input"},
		{name: "input before the acknowledgement", active: true, send: Append(Append(nil, Stdin, Seq(7), []byte("a")), Stdin, Seq(7), []byte("b")), want: "acknowledged"},
		{name: "data on the end of input", active: true, send: Append(nil, StdinEOF, Seq(7), []byte("a")), want: "bytes of input"},
		{name: "run while a call runs", active: true, send: Append(nil, Run, validRequests[0].Encode()), want: "another runs"},
		{name: "late frames of an ended call are ignored", active: true, send: Append(Append(Append(nil, Stdin, Seq(6), []byte("a")), Stdin, Seq(6), []byte("b")), Kill, Seq(6))},
		{name: "frames with no call are ignored", send: Append(Append(nil, Kill, Seq(3)), StdinEOF, Seq(3))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvEnd, hostEnd := socketPair(t)
			s := &server{conn: srvEnd}
			if tc.active {
				s.cur = &call{seq: 7, stdin: make(chan []byte, 1), ended: make(chan struct{})}
			}
			done := make(chan error, 1)
			go func() { done <- s.loop() }()
			if _, err := hostEnd.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			hostEnd.CloseWrite()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second): // ok-wallclock
				t.Fatal("the loop did not end")
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("loop: %v, want a clean end", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("loop: %v, want an error saying %q", err, tc.want)
			}
			if tc.active && s.cur.pid != 0 || s.cur != nil && s.cur.seq != 7 {
				t.Error("a refused frame started a call")
			}
		})
	}
}

func TestMergeEnvAndLookPath(t *testing.T) {
	got := mergeEnv([]string{"PATH=/image/bin", "HOSTNAME=h", "LANG=x"}, []string{"LANG=C", "A=1"})
	if strings.Join(got, " ") != "PATH=/image/bin HOSTNAME=h LANG=C A=1" {
		t.Errorf("mergeEnv = %q", got)
	}
	dir := t.TempDir()
	exe := dir + "/tool"
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dir+"/plain", nil, 0o644)
	for _, tc := range []struct {
		file, path, want string
		err              bool
	}{
		{"tool", "/nonexistent:" + dir, exe, false},
		{"plain", dir, "", true},
		{"tool", "", "", true},
		{"/abs/x", "", "/abs/x", false},
		{"sub/x", "", "sub/x", false},
	} {
		p, err := lookPath(tc.file, []string{"PATH=" + tc.path})
		if p != tc.want || (err != nil) != tc.err {
			t.Errorf("lookPath(%q, %q) = %q, %v; want %q", tc.file, tc.path, p, err, tc.want)
		}
	}
}

func TestHalfUsed(t *testing.T) {
	for _, tc := range []struct {
		used    time.Duration
		seconds uint64
		want    bool
	}{
		{0, 30, false},
		{14 * time.Second, 30, false},
		{15 * time.Second, 30, true},
		{time.Second, 1, true},
		{time.Hour, 1 << 33, false},
		{time.Hour, ^uint64(0), false},
	} {
		if got := halfUsed(tc.used, tc.seconds); got != tc.want {
			t.Errorf("halfUsed(%s, %d) = %v, want %v", tc.used, tc.seconds, got, tc.want)
		}
	}
}
