package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/internal/natstest"
)

// lockedBuffer is a bytes.Buffer a running command may write while the
// test reads it.
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

// startNATS runs an embedded NATS server without JetStream and returns
// its URL.
func startNATS(t *testing.T) string {
	t.Helper()
	return natstest.Start(t, false).ClientURL()
}

// TestNATSPrincipal runs a worker with --policy and calls its tools over
// NATS as different principals: the worker's policy decides for the
// caller's --as.
func TestNATSPrincipal(t *testing.T) {
	url := startNATS(t)
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	ctx, cancel := context.WithCancel(context.Background())
	var workerErr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"worker", "--nats", url, "--policy", roles}, strings.NewReader(""), &bytes.Buffer{}, &workerErr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("worker exit %d: %s", code, workerErr.String())
		}
	})
	for i := 0; !strings.Contains(workerErr.String(), "serving"); i++ {
		if i == 400 {
			t.Fatalf("the worker did not start: %s", workerErr.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	call := func(as ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		args := append([]string{"call", "--no-builtins", "--nats", url}, as...)
		args = append(args, "calc", `{"expression":"20+22"}`)
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	tests := []struct {
		name string
		as   []string
		code int
		want string
	}{
		{"analyst allowed", []string{"--as", "bob:analyst"}, exitOK, `"output": "42"`},
		{"guest denied", []string{"--as", "eve:guest"}, exitToolError, `"kind": "denied"`},
		{"anonymous denied", nil, exitToolError, `"kind": "denied"`},
		{"empty user refused", []string{"--as", ":analyst"}, exitToolError, "the user is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := call(tt.as...)
			if code != tt.code || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d (want %d), output lacks %q or differs:\n%s", code, tt.code, tt.want, out)
			}
		})
	}
}
