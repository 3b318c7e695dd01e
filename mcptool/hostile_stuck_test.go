package mcptool_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/mcptool"
)

// smallSendBuffers gives each connection it accepts a small send buffer,
// so that a client that does not read stops the server's writes after a
// few KiB rather than the MiBs of a default buffer: the test needs fewer
// notifications, the attack is the same.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// openStream opens the GET stream of session sid over a connection of its
// own, with a receive buffer of rcvbuf bytes (0: the default), and
// returns the connection and its reader past the response's headers.
func openStream(t *testing.T, url, sid string, rcvbuf int) (net.Conn, *bufio.Reader) {
	t.Helper()
	return openRaw(t, url, rcvbuf, "GET stream", func(host string) string {
		return fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", host, sid)
	})
}

// listenBody is a 2026-07-28 subscriptions/listen for tools/list_changed.
const listenBody = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` +
	`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

// openListen opens a subscriptions/listen stream over a connection of
// its own, as openStream does.
func openListen(t *testing.T, url string, rcvbuf int) (net.Conn, *bufio.Reader) {
	t.Helper()
	return openRaw(t, url, rcvbuf, "listen", func(host string) string {
		return fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", host, len(listenBody), listenBody)
	})
}

// openRaw sends the request request(host) over a connection of its own
// with a receive buffer of rcvbuf bytes (0: the default), and returns the
// connection and its reader past the response's headers, which must say
// 200; what names the stream in failures.
func openRaw(t *testing.T, url string, rcvbuf int, what string, request func(host string) string) (net.Conn, *bufio.Reader) {
	t.Helper()
	host := strings.TrimPrefix(url, "http://")
	c, err := net.DialTimeout("tcp", host, wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if rcvbuf > 0 {
		_ = c.(*net.TCPConn).SetReadBuffer(rcvbuf)
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	fmt.Fprint(c, request(host))
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("%s: %q %v", what, status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%s headers: %v", what, err)
		}
		if line == "\r\n" {
			break
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, br
}

// stuckReaderStarves runs the attack on a server made with opts: Mallory
// opens a session and its GET stream and never reads it; Ann's session,
// opened after, reads hers. The registry changes up to changes times, and
// after each change Ann waits up to patience for her
// notifications/tools/list_changed. It returns the change Ann waited for
// in vain, or 0 if she got every one.
func stuckReaderStarves(t *testing.T, listen bool, changes int, patience time.Duration, opts ...mcptool.ServerOption) int {
	t.Helper()
	return stuckReadersStarve(t, listen, 1, changes, patience, opts...)
}

// stuckReadersStarve is stuckReaderStarves with stuck of Mallory's
// streams, each of a session of its own, opened before Ann's.
func stuckReadersStarve(t *testing.T, listen bool, stuck, changes int, patience time.Duration, opts ...mcptool.ServerOption) int {
	t.Helper()
	reg := tool.NewRegistry()
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	reg.Register(tool.Must(tool.New("t0", "A tool.", noop)))
	srv := mcptool.NewServer(reg, opts...)
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewUnstartedServer(srv)
	hs.Listener = smallSendBuffers{hs.Listener}
	hs.Start()
	t.Cleanup(hs.Close)

	var br *bufio.Reader
	if listen {
		for range stuck {
			openListen(t, hs.URL, 1024) // never read
		}
		_, br = openListen(t, hs.URL, 0)
	} else {
		for range stuck {
			mallory := openSession(t, hs.URL, "")
			openStream(t, hs.URL, mallory, 1024) // never read
		}
		ann := openSession(t, hs.URL, "")
		_, br = openStream(t, hs.URL, ann, 0)
	}
	got := make(chan struct{}, changes)
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if strings.Contains(line, "notifications/tools/list_changed") {
				got <- struct{}{}
			}
		}
	}()
	for i := 1; i <= changes; i++ {
		reg.Register(tool.Must(tool.New(fmt.Sprintf("t%d", i), "A tool.", noop)))
		select {
		case <-got:
		case <-time.After(patience):
			return i
		}
	}
	return 0
}

// TestHostileStuckStreamReader: a client that opens its session's GET
// stream (or a 2026-07-28 subscriptions/listen stream) and never reads it
// must not stop the notifications of the other sessions. go-sdk sends each tools/list_changed to the sessions one after
// the other, and a write to a stream whose client does not read blocks
// once the connection's buffers are full; without a bound on the write,
// the sessions after the stuck one never got their notification again
// (and each change left a goroutine blocked for ever). The control: with
// the bound out of the way (an hour), Ann's notifications stop. With it
// (WithWriteTimeout), Mallory's stream ends and Ann gets every one.
func TestHostileStuckStreamReader(t *testing.T) {
	const changes = 2000
	for _, tt := range []struct {
		name   string
		listen bool
	}{{"session GET stream", false}, {"subscriptions/listen", true}} {
		t.Run(tt.name, func(t *testing.T) {
			// The streams' queues out of the way: this is the write bound's test.
			stopped := stuckReaderStarves(t, tt.listen, changes, 2*time.Second, mcptool.WithoutStreamQueue(), mcptool.WithWriteTimeout(time.Hour))
			if stopped == 0 {
				t.Fatalf("control: Ann got all %d notifications while Mallory's stream was stuck; the attack did not work", changes)
			}
			t.Logf("control: Ann's notifications stopped at change %d", stopped)
			if n := stuckReaderStarves(t, tt.listen, stopped+50, wait, mcptool.WithoutStreamQueue(), mcptool.WithWriteTimeout(100*time.Millisecond)); n != 0 {
				t.Errorf("with the write bound, Ann got no notifications/tools/list_changed for change %d", n)
			}
		})
	}
}

// TestHostileStuckReadersCostOthersNothing: with the write bound alone,
// each stuck stream still held the fan-out of every
// notifications/tools/list_changed for the whole bound (30 s by default)
// before the sessions after it got theirs, one stuck stream after the
// other: Mallory with four sessions delayed everyone's by two minutes,
// each time. Each long-lived stream now has a queue written by a
// goroutine of its own, so the fan-out never waits for a client. The
// control: without the queues and with a write bound of an hour, Ann's
// notifications stop behind Mallory's four streams. With the queues and
// the same hour, Ann gets every one, and Mallory's streams are ended once
// their queues are full.
func TestHostileStuckReadersCostOthersNothing(t *testing.T) {
	const stuck = 4
	for _, tt := range []struct {
		name   string
		listen bool
	}{{"session GET stream", false}, {"subscriptions/listen", true}} {
		t.Run(tt.name, func(t *testing.T) {
			stopped := stuckReadersStarve(t, tt.listen, stuck, 2000, 2*time.Second, mcptool.WithoutStreamQueue(), mcptool.WithWriteTimeout(time.Hour))
			if stopped == 0 {
				t.Fatal("control: Ann got every notification behind Mallory's stuck streams without the queues; the attack did not work")
			}
			t.Logf("control: Ann's notifications stopped at change %d", stopped)
			changes := stopped + 2*mcptool.StreamQueueWrites
			var log lockedBuffer
			logger := slog.New(slog.NewTextHandler(&log, nil))
			if n := stuckReadersStarve(t, tt.listen, stuck, changes, wait, mcptool.WithWriteTimeout(time.Hour), mcptool.WithServerLogger(logger)); n != 0 {
				t.Errorf("with the queues, Ann got no notifications/tools/list_changed for change %d of %d", n, changes)
			}
			if n := strings.Count(log.String(), "event stream ended"); n != stuck {
				t.Errorf("%d of Mallory's %d stuck streams were ended for a full queue:\n%s", n, stuck, log.String())
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer that a server's goroutines may log to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
