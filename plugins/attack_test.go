package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
)

// TestConfinedServerAttacks runs a malicious stdio server (built from
// testdata/evilserver) through the configuration, once unconfined (the
// control: every attack works) and once confined by a sandboxPolicy. It
// tries to read ~/.ssh (a fake key in a temporary HOME), write outside
// its workspace (a path under the host's /tmp, which the sandbox's
// private /tmp hides: the write lands there, not on the host), open a raw socket, connect to an abstract unix socket
// and to a TCP listener on loopback. Confined, each is refused, checked
// on the host's side (the key is not in what it reports, the file is not
// there, the listeners accepted nothing), and the server keeps running:
// its tool answers. The third run confines the same server in a
// container of the test image (its entry's "image"), which must refuse
// every attack as well.
func TestConfinedServerAttacks(t *testing.T) {
	requireSandbox(t)
	// Without cgo: the same program runs in the test image, which has no
	// C library. Built before HOME changes: go build's caches are under it.
	bin, evil := buildStaticEvil(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	const secret = "FAKE-PRIVATE-KEY-4711"
	key := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.WriteFile(key, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []struct {
		name     string
		confined bool
		image    string
	}{{"confined=false", false, ""}, {"confined=true", true, ""}, {"container", true, testImage}} {
		confined := mode.confined
		t.Run(mode.name, func(t *testing.T) {
			if mode.image != "" {
				requireEngine(t)
			}
			tcp, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer tcp.Close()
			name := fmt.Sprintf("clawtool-evil-%d-%s", os.Getpid(), strings.ReplaceAll(mode.name, "=", "-"))
			abstract, err := net.Listen("unix", "@"+name)
			if err != nil {
				t.Fatal(err)
			}
			defer abstract.Close()
			accepted := map[string]chan string{"network": accept(tcp), "abstract unix socket": accept(abstract)}
			dir := t.TempDir()
			workspace := filepath.Join(dir, "work")
			if err := os.Mkdir(workspace, 0o755); err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(dir, "outside.txt")
			if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(`{"readOnly": [`+jsonString(bin)+`]}`), 0o600); err != nil {
				t.Fatal(err)
			}
			server := map[string]any{"command": evil, "args": []string{key, outside, tcp.Addr().String(), name}, "workspace": workspace}
			if !confined {
				server["unsandboxed"] = true
			}
			if mode.image != "" {
				server["image"] = mode.image
			}
			b, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{"evil": server}})
			file := filepath.Join(dir, "config.json")
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			reg := tool.NewRegistry()
			h := NewHost(reg, WithConnectTimeout(3*time.Minute))
			h.containerOwner = "clawtool-plugins-test"
			defer h.Close()
			if err := h.Reload(t.Context(), file); err != nil {
				t.Fatal(err)
			}
			res := reg.Execute(t.Context(), "attempts", json.RawMessage(`{}`))
			if res.IsError {
				t.Fatalf("the server does not answer: %+v %+v", res, h.Status())
			}
			t.Logf("the server reports:\n%s", res.Output)
			_, statErr := os.Stat(outside)
			host := map[string]bool{ // did the attack work, seen from the host
				"read key":      strings.Contains(res.Output, secret),
				"write outside": statErr == nil,
				"raw socket":    strings.Contains(res.Output, "raw socket: done"),
			}
			// The server made its attempts before it served: a connection
			// it made is already queued, so a short bound on the wait is
			// enough, and one bound serves both listeners.
			wait, stop := context.WithTimeout(t.Context(), 5*time.Second)
			defer stop()
			for what, ch := range accepted {
				select {
				case got := <-ch:
					host[what] = got != ""
				case <-wait.Done():
					host[what] = false
				}
			}
			for what, worked := range host {
				if worked == confined {
					t.Errorf("%s: worked %v, want %v", what, worked, !confined)
				}
			}
		})
	}
}

// buildEvil builds testdata/evilserver into a fresh directory anyone may
// search and returns the directory and the program's path. Call it
// before changing HOME: go build's cache and module cache are under it
// by default, and a fresh HOME rebuilt everything (minutes under load).
func buildEvil(t *testing.T) (dir, evil string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "plugins-evil-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	evil = filepath.Join(dir, "evilserver")
	if out, err := exec.Command("go", "build", "-o", evil, "./testdata/evilserver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir, evil
}

// accept reports what the first connection to l sends ("" when l closes
// first).
func accept(l net.Listener) chan string {
	ch := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			ch <- ""
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		ch <- string(buf[:n]) + "connected"
	}()
	return ch
}
