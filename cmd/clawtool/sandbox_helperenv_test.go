package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// TestSandboxHelperEnv: clawtool runs its sandboxes with the helper
// program sandbox.HelperEnv names (the way to the cheapest cold run for
// a large program such as clawtool), and a name that is no helper built
// from these sources fails the run: the command never runs with fewer
// layers. Control: the same command runs without the variable.
func TestSandboxHelperEnv(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := buildSandboxHelper(t)
	// A program that is no helper, once with one name (it starts and
	// fails the protocol) and once with two (a hard link is refused
	// before it starts).
	notHelper := filepath.Join(filepath.Dir(helper), "true")
	helperCopy := filepath.Join(filepath.Dir(helper), "true-alone")
	if b, err := os.ReadFile("/bin/true"); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(notHelper, b, 0o755); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(helperCopy, b, 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(filepath.Dir(helper), "linked")
	if err := os.Link(notHelper, linked); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, helper string
		ran          bool
		stderr       string
	}{
		{"control: unset", "", true, "mode native"},
		{"helper program", helper, true, "mode native"},
		{"relative path", "clawtool-sandbox-helper", false, "not an absolute path"},
		{"not a helper", helperCopy, false, "start helper"},
		{"hard link", linked, false, "hard links"},
		{"missing", filepath.Join(filepath.Dir(helper), "missing"), false, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), exe, "sandbox", "run", "--", "sh", "-c", "echo ran")
			cmd.Env = append(os.Environ(), asCLIEnv+"=1", sandbox.SpareEnv+"=0")
			if tc.helper != "" {
				cmd.Env = append(cmd.Env, sandbox.HelperEnv+"="+tc.helper)
			}
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			if ran := err == nil && out.String() == "ran\n"; ran != tc.ran || !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("%s=%q: err %v, ran %v (want %v)\nstdout: %q\nstderr: %q", sandbox.HelperEnv, tc.helper, err, ran, tc.ran, out.String(), errOut.String())
			}
			if !tc.ran && strings.Contains(out.String(), "ran") {
				t.Errorf("the command ran: %q", out.String())
			}
		})
	}
}

// buildSandboxHelper builds the command clawtool-sandbox-helper from
// this module into a directory the sandbox user may search.
func buildSandboxHelper(t *testing.T) string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the go command is needed to build clawtool-sandbox-helper")
		}
		t.Skip("no go command to build clawtool-sandbox-helper")
	}
	dir, err := os.MkdirTemp("", "clawtool-cli-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "clawtool-sandbox-helper")
	cmd := exec.Command(gocmd, "build", "-o", out, "github.com/miniopenclaw/tool/sandbox/cmd/clawtool-sandbox-helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build clawtool-sandbox-helper: %v\n%s", err, b)
	}
	return out
}
