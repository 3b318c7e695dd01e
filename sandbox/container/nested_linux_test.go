package container

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// nestedRepo makes a repository's directory layout (hooks, objects,
// config) at dir inside ws, owned like the rest of the workspace.
func nestedRepo(t *testing.T, ws, dir string) {
	t.Helper()
	for _, d := range []string{"hooks", "objects"} {
		must(t, os.MkdirAll(filepath.Join(dir, ".git", d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644))
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error {
		return os.Lchown(p, sandbox.DefaultUID, sandbox.DefaultUID)
	})
}

// plantNested is the attack: a hook and core.fsmonitor planted in the
// repository at vendor/lib, which git would run as the user the next
// time the user runs git there. It exits 0 only if both writes landed.
const plantNested = `echo pwned > vendor/lib/.git/hooks/pre-commit; a=$?; ` +
	`printf '[core]\n\tfsmonitor = sh -c pwned\n' >> vendor/lib/.git/config; b=$?; ` +
	`[ $a -eq 0 ] && [ $b -eq 0 ]`

// TestContainerNestedRepositoryAttack is catalog row A52 for the
// container backends, with its control: a run plants a hook and
// core.fsmonitor in a repository nested in the workspace. With git's
// paths out of the protected list (the protection off) both reach the
// host; with the default list neither does, in a fresh container and in
// a warm one — including a warm container made before the nested
// repository existed.
func TestContainerNestedRepositoryAttack(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			for _, tc := range []struct {
				name    string
				p       func(ws string) sandbox.Policy
				early   bool // a first call before the nested repository exists
				planted bool
			}{
				{"control: git's paths not protected", func(ws string) sandbox.Policy {
					return sandbox.Policy{Workspace: ws, Protected: []string{".bashrc"}}
				}, false, true},
				{"default", func(ws string) sandbox.Policy { return sandbox.Policy{Workspace: ws} }, false, false},
				{"default, repository made after a first call", func(ws string) sandbox.Policy { return sandbox.Policy{Workspace: ws} }, true, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ws := protectWorkspace(t, true)
					p := tc.p(ws)
					if tc.early {
						if r, err := c.Run(context.Background(), p, []string{"true"}, nil); err != nil || !r.OK() {
							t.Fatalf("first call: %v %v", r, err)
						}
					}
					nestedRepo(t, ws, filepath.Join(ws, "vendor", "lib"))
					r, err := c.Run(context.Background(), p, []string{"sh", "-c", plantNested}, nil)
					if err != nil {
						t.Fatal(err)
					}
					if r.OK() != tc.planted {
						t.Errorf("the attack's run: %s %q, want ok %v", r.Summary(), r.Stderr, tc.planted)
					}
					hook, _ := os.ReadFile(filepath.Join(ws, "vendor", "lib", ".git", "hooks", "pre-commit"))
					config, _ := os.ReadFile(filepath.Join(ws, "vendor", "lib", ".git", "config"))
					got := strings.Contains(string(hook), "pwned") || strings.Contains(string(config), "fsmonitor")
					if got != tc.planted {
						t.Errorf("hook or config planted on the host: %v, want %v", got, tc.planted)
					}
				})
			}
		})
	}
}

// TestContainerNestedRepositoryLimit checks that a container run whose
// workspace the search for nested repositories cannot finish is refused,
// naming the limit and the option, and that raising the option runs it.
func TestContainerNestedRepositoryLimit(t *testing.T) {
	c := requireEngineWith(t, Options{})
	ws := protectWorkspace(t, true)
	for i := range 40 {
		must(t, os.WriteFile(filepath.Join(ws, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o644))
	}
	p := sandbox.Policy{Workspace: ws}
	p.Limits.GitSearch = 16
	_, err := c.Run(context.Background(), p, []string{"true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "more than 16 entries") || !strings.Contains(err.Error(), "Limits.GitSearch") {
		t.Errorf("16 entries: %v, want a refusal naming the limit and Limits.GitSearch", err)
	}
	p.Limits.GitSearch = 1000
	if r, err := c.Run(context.Background(), p, []string{"true"}, nil); err != nil || !r.OK() {
		t.Errorf("1000 entries: %v %v", r, err)
	}
}
