package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
	"github.com/miniopenclaw/tool/sandbox/container"
)

func TestSandboxCommand(t *testing.T) {
	base, err := os.MkdirTemp("", "clawtool-cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	os.Chmod(base, 0o755)
	if os.Geteuid() == 0 {
		os.Chown(ws, sandbox.DefaultUID, sandbox.DefaultUID)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("from the workspace\n"), 0o644)

	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string
		stderr    string
		notStdout string
	}{
		{"probe", []string{"sandbox", "probe"}, exitOK, "ok      landlock", "", ""},
		{"run ok", []string{"sandbox", "run", "--workspace", ws, "--", "cat", "a.txt"}, exitOK, "from the workspace\n", "mode native", ""},
		{"run fails", []string{"sandbox", "run", "--", "sh", "-c", "printf '\\033[2J'; exit 5"}, exitToolError, `\x1b[2J`, "exited with status 5", "\x1b"},
		// The limit leaves the cold helper time to start (tens of ms, far
		// more under CI's load), so that it stops the command itself.
		{"run times out", []string{"sandbox", "run", "--timeout", "3s", "--", "sleep", "30"}, exitToolError, "", "outcome timed_out", ""},
		{"run no network", []string{"sandbox", "run", "--net", "none", "--", "sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"}, exitOK, "lo\n", "", "eth"},
		// An unlisted name is refused by the proxy before any lookup (the
		// .invalid names never resolve), reported with who asked.
		{"run allow-host refuses", []string{"sandbox", "run", "--allow-host", "listed.invalid", "--", "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "http://other.invalid/"}, exitOK, "403", "network denied: other.invalid port 80 (asked by curl): not in the allow list", ""},
		// Control: the proxy's way out is the only one; /proc/net/dev lists lo alone.
		{"run allow-host netns", []string{"sandbox", "run", "--allow-host", "listed.invalid", "--", "sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo $HTTPS_PROXY"}, exitOK, "lo\nhttp://127.0.0.1:3128\n", "", "eth"},
		{"run allow-host bad rule", []string{"sandbox", "run", "--allow-host", "a.*.example", "--", "true"}, exitUsage, "", "wildcard", ""},
		{"run allow-host with host net", []string{"sandbox", "run", "--net", "host", "--allow-host", "a.example", "--", "true"}, exitToolError, "", "needs network", ""},
		// What the run changed but was not applied is said, escaped: a
		// user reading only the exit status would think the hook landed.
		{"run protected path", []string{"sandbox", "run", "--workspace", ws, "--", "sh", "-c", "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit"}, exitOK, "", "protected paths (not applied): .git/hooks", ""},
		{"run missing command", []string{"sandbox", "run", "--", "no-such-command-xyz"}, exitToolError, "", "not found", ""},
		{"run no command", []string{"sandbox", "run"}, exitUsage, "", "no command", ""},
		{"unknown", []string{"sandbox", "frob"}, exitUsage, "", "unknown subcommand", ""},
		{"call read_file", []string{"call", "--workspace", ws, "read_file", `{"path":"a.txt"}`}, exitOK, `"output": "from the workspace\n"`, "", ""},
		{"call read_file escape", []string{"call", "--workspace", ws, "read_file", `{"path":"../../etc/passwd"}`}, exitToolError, "escapes the workspace", "", "root:"},
		{"call exec", []string{"call", "--workspace", ws, "exec", `{"argv":["cat","a.txt"]}`}, exitOK, "from the workspace", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), tt.args, nil, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) ||
				(tt.notStdout != "" && strings.Contains(out.String(), tt.notStdout)) {
				t.Errorf("clawtool %v: exit %d (want %d)\nstdout: %q\nstderr: %q", tt.args, code, tt.code, out.String(), errOut.String())
			}
		})
	}
}

// containerImage is the test image .ci/docker-engine.sh builds.
const containerImage = "clawtool-test/busybox:1"

func TestSandboxCommandContainer(t *testing.T) {
	c, err := container.New(t.Context(), container.Options{Image: containerImage})
	if err == nil {
		_, err = c.Run(t.Context(), sandbox.Policy{}, []string{"true"}, nil)
		c.Close()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err, " (run .ci/docker-engine.sh)")
	}
	ws := t.TempDir()
	os.Chmod(ws, 0o777)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("from the workspace\n"), 0o644)
	img := containerImage
	tests := []struct {
		name, stdout, stderr string
		args                 []string
		code                 int
	}{
		{"run ok", "from the workspace\n", "mode fresh", []string{"sandbox", "run", "--image", img, "--workspace", ws, "--", "cat", "a.txt"}, exitOK},
		{"run in the image", "nobody\n", "", []string{"sandbox", "run", "--image", img, "--", "sh", "-c", "cat /etc/passwd | grep -c nobody >/dev/null && id -un"}, exitOK},
		{"run network", "lo\n", "", []string{"sandbox", "run", "--image", img, "--", "sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"}, exitOK},
		// The limit leaves a fresh container time to start (about 0.3 s, several
		// times that under CI's load), so that it stops the command itself.
		{"run times out", "", "outcome timed_out", []string{"sandbox", "run", "--image", img, "--timeout", "3s", "--", "sleep", "30"}, exitToolError},
		{"run allow-host refuses", "", "network denied: other.invalid port 80 (asked by busybox): not in the allow list", []string{"sandbox", "run", "--image", img, "--allow-host", "listed.invalid", "--", "busybox", "wget", "-q", "-O", "-", "http://other.invalid/"}, exitToolError},
		{"run allow-host netns", "lo\nhttp://127.0.0.1:3128\n", "mode fresh", []string{"sandbox", "run", "--image", img, "--allow-host", "listed.invalid", "--", "sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo $HTTPS_PROXY"}, exitOK},
		{"run missing image", "", "not in the container engine", []string{"sandbox", "run", "--image", "clawtool-test/none:0", "--", "true"}, exitToolError},
		// pwd is a shell builtin, not a program, in the test image.
		{"call exec", "/workspace", "", []string{"call", "--workspace", ws, "--image", img, "exec", `{"argv":["sh","-c","pwd"]}`}, exitOK},
		{"call exec in the call server", `"sandbox_mode": "warm_server"`, "", []string{"call", "--workspace", ws, "--image", img, "exec", `{"argv":["true"]}`}, exitOK},
		{"call exec id", "65534", "", []string{"call", "--workspace", ws, "--image", img, "exec", `{"argv":["id","-u"]}`}, exitOK},
		{"image needs workspace", "", "--image needs --workspace", []string{"call", "--image", img, "exec", `{"argv":["pwd"]}`}, exitToolError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), tt.args, nil, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("clawtool %v: exit %d (want %d)\nstdout: %q\nstderr: %q", tt.args, code, tt.code, out.String(), errOut.String())
			}
		})
	}
}
