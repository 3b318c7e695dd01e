package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectedPathFormsAttack: a policy's protected list written with a
// trailing slash or a dot (".git/hooks/", "./.git/config") passed
// Validate, and the helper bound the path, but the checks that add what
// git reads besides (a nested repository's hooks and config, commondir,
// submodules' repositories, the hooks directory core.hooksPath names)
// compared the list with ".git/hooks" and ".git/config" as written, found
// neither, and added nothing: a run planted a hook in a nested clone. The
// control protects only .bashrc; every form must protect as the clean
// one does.
func TestProtectedPathFormsAttack(t *testing.T) {
	f := newFixture(t)
	repo := filepath.Join(f.ws, "vendor", "lib")
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	for _, tc := range []struct {
		name      string
		protected []string
		planted   bool
	}{
		{"control: git's paths not protected", []string{".bashrc"}, true},
		{"clean", []string{".git/hooks", ".git/config"}, false},
		{"trailing slash", []string{".git/hooks/", ".git/config/"}, false},
		{"leading dot", []string{"./.git/hooks", "./.git/config"}, false},
		{"doubled slash and inner dot", []string{".git//hooks", ".git/./config"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must(t, os.RemoveAll(filepath.Join(f.ws, "vendor")))
			gitInit(t, f.ws, repo)
			p := f.policy()
			p.Protected = tc.protected
			r := f.sandboxed(t, context.Background(), DefaultNative(), p, "write", hook)
			out := string(r.Stdout)
			if tc.planted != strings.HasPrefix(out, "OK") {
				t.Errorf("%q (stderr %q): planted %v, want %v", out, trim(r.Stderr), strings.HasPrefix(out, "OK"), tc.planted)
			}
			if got := exists(hook)(); got != tc.planted {
				t.Errorf("the nested repository's hook on the host: %v, want %v", got, tc.planted)
			}
		})
	}
}
