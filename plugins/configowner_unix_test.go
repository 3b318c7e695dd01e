//go:build unix

package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool"
)

// TestConfigWritableByOthers: a configuration file names the commands
// the host runs as its user, and its sandbox policy file what a confined
// server may reach; another local user who may write either (a file
// left group- or world-writable, in a shared project directory) makes
// this user run their command, or widens a confined server's network.
// Before, ReadFile read such files as any other (the control: the same
// files with mode 0600 are read, so the refusal is the mode's). Now the
// file is refused, saying how to fix it, and so is one another user
// owns (root excepted): its owner may change it at any time.
func TestConfigWritableByOthers(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	policy := filepath.Join(dir, "sandbox.json")
	write := func(name, text string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, mode); err != nil {
			t.Fatal(err)
		}
	}
	perm := filepath.Join(dir, "perm.cedar")
	const cfg = `{"sandboxPolicy": "sandbox.json", "permissions": "perm.cedar", "mcpServers": {"s": {"command": "srv"}}}`
	write(policy, `{"network": "none"}`, 0o600)
	for _, c := range []struct {
		name             string
		cfgMode, polMode os.FileMode
		want             string // "" read, else in the error
	}{
		{"control", 0o600, 0o600, ""},
		{"readable by others", 0o644, 0o644, ""},
		{"config world-writable", 0o666, 0o600, "config.json may be written by other users (mode 0666)"},
		{"config group-writable", 0o620, 0o600, "config.json may be written by other users (mode 0620)"},
		{"policy world-writable", 0o600, 0o602, "sandbox.json may be written by other users (mode 0602)"},
		{"permissions group-writable", 0o600, 0o600, "perm.cedar may be written by other users (mode 0660)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			write(config, cfg, c.cfgMode)
			write(policy, `{"network": "none"}`, c.polMode)
			permMode := os.FileMode(0o600)
			if strings.HasPrefix(c.name, "permissions") {
				permMode = 0o660
			}
			write(perm, "permit (principal, action, resource);\n", permMode)
			_, err := ReadFile(config)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "chmod go-w")):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	write(perm, "permit (principal, action, resource);\n", 0o600)
	// The per-server policy an entry names is held to the same.
	write(config, `{"mcpServers": {"s": {"command": "srv", "sandboxPolicy": "sandbox.json"}}}`, 0o600)
	write(policy, `{"network": "none"}`, 0o666)
	h := NewHost(tool.NewRegistry())
	defer h.Close()
	if err := h.Reload(t.Context(), config); err != nil {
		t.Fatal(err)
	}
	if st := h.Status(); len(st) != 1 || st[0].State != Failed || !strings.Contains(st[0].Err, "sandbox.json may be written by other users") {
		t.Errorf("per-server policy: %+v", st)
	}
	if os.Geteuid() == 0 {
		// Another user's file: root may give it away.
		write(config, cfg, 0o600)
		write(policy, `{"network": "none"}`, 0o600)
		if err := os.Chown(config, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(config); err == nil || !strings.Contains(err.Error(), "owned by user 4242") {
			t.Errorf("another user's configuration: %v", err)
		}
		if err := os.Chown(config, 0, 0); err != nil {
			t.Fatal(err)
		}
		// A symbolic link is followed to the file it names, whose owner
		// and mode count.
		link := filepath.Join(dir, "link.json")
		if err := os.Symlink(config, link); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(link); err != nil {
			t.Errorf("a link to a good file: %v", err)
		}
		if err := os.Chown(config, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(link); err == nil || !strings.Contains(err.Error(), "owned by user 4242") {
			t.Errorf("a link to another user's configuration: %v", err)
		}
	}
}
