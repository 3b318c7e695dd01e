package main

import (
	"bytes"
	"context"
	"os"
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

// writePrincipalKey writes a shared principal key, mode 0600, and
// returns its path.
func writePrincipalKey(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "principal.key")
	if err := os.WriteFile(p, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startWorker runs clawtool worker with args until the test ends, and
// waits until it serves.
func startWorker(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var workerErr lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, append([]string{"worker"}, args...), strings.NewReader(""), &bytes.Buffer{}, &workerErr)
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
}

// TestNATSPrincipal runs a worker with --policy and --principal-key and
// calls its tools over NATS as different principals: the worker's policy
// decides for the caller's --as when the caller signs it with the same
// key, and refuses every call that is not signed with it.
func TestNATSPrincipal(t *testing.T) {
	url := startNATS(t)
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	key := writePrincipalKey(t)
	startWorker(t, "--nats", url, "--policy", roles, "--principal-key", key)
	call := func(as ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		args := append([]string{"call", "--no-builtins", "--nats", url}, as...)
		args = append(args, "calc", `{"expression":"20+22"}`)
		code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	other := filepath.Join(t.TempDir(), "other.key")
	os.WriteFile(other, []byte("another key, also 32 bytes long!"), 0o600)
	tests := []struct {
		name string
		as   []string
		code int
		want string
	}{
		{"analyst allowed", []string{"--as", "bob:analyst", "--principal-key", key}, exitOK, `"output": "42"`},
		{"guest denied", []string{"--as", "eve:guest", "--principal-key", key}, exitToolError, `"kind": "denied"`},
		{"anonymous denied", []string{"--principal-key", key}, exitToolError, `"kind": "denied"`},
		{"empty user refused", []string{"--as", ":analyst", "--principal-key", key}, exitToolError, "the user is empty"},
		{"unsigned analyst refused", []string{"--as", "bob:analyst"}, exitToolError, "principal claim refused: header Clawtool-Principal-Signature is missing"},
		// The worker's refusal is signed with a key the caller does not
		// hold: the caller cannot authenticate it, and says so.
		{"another key refused", []string{"--as", "bob:analyst", "--principal-key", other}, exitToolError, "which this reader does not hold (the worker and this process hold different keys"},
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

// TestNATSPrincipalTrustHeader: --trust-principal-header names the risk
// and believes unsigned claims, as workers did before signing.
func TestNATSPrincipalTrustHeader(t *testing.T) {
	url := startNATS(t)
	startWorker(t, "--nats", url, "--policy", filepath.Join("testdata", "policy", "roles.cedar"), "--trust-principal-header")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"call", "--no-builtins", "--nats", url, "--as", "bob:analyst", "calc", `{"expression":"20+22"}`}, strings.NewReader(""), &stdout, &stderr)
	if code != exitOK || !strings.Contains(stdout.String(), `"output": "42"`) {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
}

// TestWorkerPrincipalFlags: the worker's default refuses to decide by
// unsigned claims; flags that do not go together, and a key file others
// may read, are refused before it serves.
func TestWorkerPrincipalFlags(t *testing.T) {
	roles := filepath.Join("testdata", "policy", "roles.cedar")
	key := writePrincipalKey(t)
	open := filepath.Join(t.TempDir(), "open.key")
	os.WriteFile(open, []byte("0123456789abcdef0123456789abcdef"), 0o644)
	os.Chmod(open, 0o644)
	url := "nats://127.0.0.1:1" // never reached: every case fails first
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"policy without key or trust", []string{"--policy", roles}, exitUsage, "give --principal-key FILE"},
		{"key and trust", []string{"--policy", roles, "--principal-key", key, "--trust-principal-header"}, exitUsage, "give one"},
		{"trust without policy", []string{"--trust-principal-header"}, exitUsage, "needs --policy"},
		{"key others may read", []string{"--policy", roles, "--principal-key", open}, exitToolError, "other users"},
		{"accepted key without a key", []string{"--policy", roles, "--trust-principal-header", "--accept-principal-key", key}, exitUsage, "--accept-principal-key needs --principal-key"},
		{"accepted key others may read", []string{"--policy", roles, "--principal-key", key, "--accept-principal-key", open}, exitToolError, "--accept-principal-key: " + open + " may be read or written by other users"},
		{"the key accepted twice", []string{"--policy", roles, "--principal-key", key, "--accept-principal-key", key}, exitToolError, "given twice"},
		{"shared nonces without a key", []string{"--policy", roles, "--trust-principal-header", "--shared-nonces"}, exitUsage, "--shared-nonces needs --principal-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"worker", "--nats", url}, tc.args...), strings.NewReader(""), &bytes.Buffer{}, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d (want %d), stderr lacks %q:\n%s", code, tc.code, tc.want, stderr.String())
			}
		})
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"call", "--principal-key", key, "calc", `{"expression":"1"}`}, strings.NewReader(""), &bytes.Buffer{}, &stderr); code == exitOK || !strings.Contains(stderr.String(), "needs --nats") {
		t.Errorf("call --principal-key without --nats: exit %d, %s", code, stderr.String())
	}
}
