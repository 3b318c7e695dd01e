package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostViewsRefused: a module runs inside this process, so a grant of
// /proc (or a directory holding it, or one within it) showed it this
// process's own files under /proc/self: its command line, its
// environment (the program's API keys) and its memory (/proc/self/mem).
// /sys and /dev show the host's kernel state and devices. Each grant,
// as a workspace or a read-only path, as written or through a link, is
// refused before the module runs. The control reads a file of an
// ordinary granted directory through the same module: what the module
// is granted it reads, so the refusal is what stops it.
func TestHostViewsRefused(t *testing.T) {
	r := newRuntime(t, Options{})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte("granted"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("control: an ordinary directory", func(t *testing.T) {
		res := run(t, r, readModule("cmdline"), context.Background(), Config{ReadOnly: []string{dir}})
		if res.ExitCode != 0 || string(res.Stdout) != "granted" {
			t.Fatalf("the module could not read what it was granted: %+v", res)
		}
	})
	link := filepath.Join(t.TempDir(), "p")
	if err := os.Symlink("/proc/self", link); err != nil {
		t.Fatal(err)
	}
	m, err := r.Compile(context.Background(), readModule("self/cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{
		{ReadOnly: []string{"/proc"}},
		{ReadOnly: []string{"/proc/self"}},
		{ReadOnly: []string{link}},
		{ReadOnly: []string{"/"}},
		{ReadOnly: []string{"/sys"}},
		{ReadOnly: []string{"/dev"}},
		{Workspace: "/proc"},
		{Workspace: link},
	} {
		res, err := m.Run(context.Background(), c)
		if err == nil {
			t.Errorf("%+v: the module ran: %q; want refused", c, res.Stdout)
			continue
		}
		if !strings.Contains(err.Error(), "view") {
			t.Errorf("%+v: %v; want the refusal to say why", c, err)
		}
		if _, err := m.Instantiate(context.Background(), c); err == nil {
			t.Errorf("%+v: instantiated; want refused", c)
		}
	}
}
