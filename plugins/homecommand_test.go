package plugins

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool"
	"github.com/miniopenclaw/tool/sandbox"
)

// TestConfinedCommandInHomeBin: a confined server installed as
// ~/bin/server (or ~/server) got its command's installation prefix made
// readable, the parent of a "bin" directory, which there is the home
// directory itself: the server read every file of the home directory
// that the sandbox user may read (a 0644 ~/.config file here). Now a
// prefix that is the home directory, or holds it, is not made readable:
// the command's own directory is, when that is neither, or else the
// command alone.
func TestConfinedCommandInHomeBin(t *testing.T) {
	t.Run("policy", func(t *testing.T) {
		home := t.TempDir()
		t.Setenv("HOME", home)
		for _, tt := range []struct {
			command string
			want    string // the path made readable
		}{
			{filepath.Join(home, "bin", "server"), filepath.Join(home, "bin")},
			{filepath.Join(home, "server"), filepath.Join(home, "server")},
			{filepath.Join(home, ".nvm", "v20", "bin", "node"), filepath.Join(home, ".nvm", "v20")},
			{filepath.Join(home, "tools", "server"), filepath.Join(home, "tools")},
		} {
			if err := os.MkdirAll(filepath.Dir(tt.command), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tt.command, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			p, err := serverPolicy(&sandbox.Policy{}, Server{Command: tt.command}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(p.ReadOnly, home) || !slices.Contains(p.ReadOnly, tt.want) {
				t.Errorf("command %s: read-only %q, want %s and not the home directory", tt.command, p.ReadOnly, tt.want)
			}
		}
	})

	t.Run("confined", func(t *testing.T) {
		requireSandbox(t)
		_, built := buildStaticEvil(t)
		// A home the sandbox user may reach, as most are.
		home, err := os.MkdirTemp("", "plugins-home-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		if err := os.Chmod(home, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("HOME", home)
		const secret = "FAKE-CLOUD-TOKEN-0815"
		secretFile := filepath.Join(home, ".config", "token")
		if err := os.MkdirAll(filepath.Dir(secretFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(secretFile, []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		evil := filepath.Join(home, "bin", "evilserver")
		if err := os.MkdirAll(filepath.Dir(evil), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(evil, b, 0o755); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		workspace := filepath.Join(dir, "work")
		if err := os.Mkdir(workspace, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sandbox.json"), []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, _ := json.Marshal(map[string]any{"sandboxPolicy": "sandbox.json", "mcpServers": map[string]any{
			"evil": map[string]any{"command": evil, "workspace": workspace},
		}})
		file := filepath.Join(dir, "config.json")
		if err := os.WriteFile(file, cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		reg := tool.NewRegistry()
		h := NewHost(reg, WithConnectTimeout(3*time.Minute))
		defer h.Close()
		if err := h.Reload(t.Context(), file); err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"read": secretFile, "write": filepath.Join(workspace, "x")})
		res := reg.Execute(t.Context(), "files", args)
		if res.IsError {
			t.Fatalf("the server does not answer: %+v %+v", res, h.Status())
		}
		if strings.Contains(res.Output, secret) {
			t.Errorf("the confined server read a file of the home directory:\n%s", res.Output)
		}
		if !strings.Contains(res.Output, "read: refused") || !strings.Contains(res.Output, "write: done") {
			t.Errorf("the server reports:\n%s\nwant the read refused and the write in its workspace done", res.Output)
		}
	})
}
