package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineWriter passes what serve writes to stderr to a channel, by line.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.buf[:i]):
		default:
		}
		w.buf = w.buf[i+1:]
	}
}

// startHTTP runs serve --http on a free loopback port with short
// deadlines and returns its address.
func startHTTP(t *testing.T, args ...string) string {
	t.Helper()
	oldBody, oldIdle := httpBodyTimeout, httpIdleTimeout
	httpBodyTimeout, httpIdleTimeout = 100*time.Millisecond, 100*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lineWriter{lines: make(chan string, 64)}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--http", "127.0.0.1:0"}, args...), nil, io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		httpBodyTimeout, httpIdleTimeout = oldBody, oldIdle
	})
	at := regexp.MustCompile(`serving MCP at http://(\S+)/mcp`)
	for {
		select {
		case line := <-stderr.lines:
			if m := at.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-time.After(wait):
			t.Fatal("serve --http did not say where it listens")
		}
	}
}

// closedByServer reports whether the server closes conn (before the
// guard, which only keeps a broken server from hanging the test).
func closedByServer(t *testing.T, conn net.Conn) bool {
	t.Helper()
	return closedWithin(conn, wait)
}

func TestServeHTTPDeadlines(t *testing.T) {
	addr := startHTTP(t)

	t.Run("slow body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{")
		if !closedByServer(t, conn) {
			t.Error("a request whose body never came kept its connection open")
		}
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /elsewhere HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		r := bufio.NewReader(conn)
		status, err := r.ReadString('\n')
		if err != nil || !strings.Contains(status, "404") {
			t.Fatalf("GET /elsewhere: %q, %v", status, err)
		}
		if !closedByServer(t, conn) {
			t.Error("an idle keep-alive connection stayed open")
		}
	})
}

// TestServeHTTPStreamsOutlastDeadlines makes a call whose answer streams
// for longer than the body and idle deadlines, on the 2025-11-25
// transport with its standing GET stream: both survive.
func TestServeHTTPStreamsOutlastDeadlines(t *testing.T) {
	addr := startHTTP(t, "--mcp", remoteServer(t))
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	// A fresh connection per POST: the server closes a keep-alive
	// connection after 100 ms idle here, and a POST sent on one it is
	// closing at that moment is reset, not retried (HTTP/1.1 does not
	// replay a POST). That race is not what this test is about.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	gate := filepath.Join(t.TempDir(), "gate")
	// The import runs in the background: wait for the tool.
	for {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tl := range res.Tools {
			found = found || tl.Name == "remote_wait"
		}
		if found {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	go func() {
		time.Sleep(500 * time.Millisecond) // well past both deadlines
		os.WriteFile(gate, nil, 0o600)
	}()
	args, _ := json.Marshal(map[string]string{"gate": gate})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "remote_wait", Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("a call answered after the deadlines: %v", err)
	}
	if res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "opened" {
		t.Errorf("remote_wait: %+v", res)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Errorf("the session after the deadlines: %v", err)
	}
}

func TestLoopback(t *testing.T) {
	for _, tt := range []struct {
		ip   string
		want bool
	}{
		{"127.0.0.1", true}, {"127.9.9.9", true}, {"::1", true},
		{"0.0.0.0", false}, {"::", false}, {"192.0.2.1", false},
	} {
		if got := loopback(&net.TCPAddr{IP: net.ParseIP(tt.ip), Port: 80}); got != tt.want {
			t.Errorf("loopback(%s) = %v, want %v", tt.ip, got, tt.want)
		}
	}
}

// TestServeWaitTask: clawtool serve, with no code of the user's, serves
// the built-in wait tool as a task to a client that supports tasks:
// clawtool call --mcp-url sees its states and gets its result. The
// control: calc, which is no task tool, is a plain call (no states).
func TestServeWaitTask(t *testing.T) {
	addr := startHTTP(t)
	for _, tc := range []struct {
		tool, args, output string
		task               bool
	}{
		{"wait", `{"seconds":0.2}`, "waited 0.2 seconds", true},
		{"calc", `{"expression":"1+1"}`, `"output": "2"`, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{"call", "--no-builtins", "--mcp-url", "http://" + addr + "/mcp", tc.tool, tc.args},
				strings.NewReader(""), &stdout, &stderr)
			if code != exitOK || !strings.Contains(stdout.String(), tc.output) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout.String(), stderr.String())
			}
			states := strings.Contains(stderr.String(), "("+tc.tool+"): working") && strings.Contains(stderr.String(), "("+tc.tool+"): completed")
			if states != tc.task || strings.Contains(stderr.String(), "task") != tc.task {
				t.Errorf("a task %v, want %v; stderr:\n%s", states, tc.task, stderr.String())
			}
		})
	}
}
