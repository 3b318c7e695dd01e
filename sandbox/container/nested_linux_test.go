package container

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	runNested(t, []nestedRow{
		{"control: git's paths not protected", gitUnprotected, false, true},
		{"default", defaultPolicy, false, false},
		{"default, repository made after a first call", defaultPolicy, true, false},
	}, func(t *testing.T, c *Backend, ws string, p sandbox.Policy, planted bool) {
		nestedRepo(t, ws, filepath.Join(ws, "vendor", "lib"))
		r, err := c.Run(context.Background(), p, []string{"sh", "-c", plantNested}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.OK() != planted {
			t.Errorf("the attack's run: %s %q, want ok %v", r.Summary(), r.Stderr, planted)
		}
		hook, _ := os.ReadFile(filepath.Join(ws, "vendor", "lib", ".git", "hooks", "pre-commit"))
		config, _ := os.ReadFile(filepath.Join(ws, "vendor", "lib", ".git", "config"))
		got := strings.Contains(string(hook), "pwned") || strings.Contains(string(config), "fsmonitor")
		if got != planted {
			t.Errorf("hook or config planted on the host: %v, want %v", got, planted)
		}
	})
}

// A nestedRow is one row of the nested-repository attacks: the policy,
// whether a first call comes before the nested repositories exist (so
// that a warm container predates them), and whether the attack must land.
type nestedRow struct {
	name    string
	p       func(ws string) sandbox.Policy
	early   bool
	planted bool
}

// gitUnprotected is the controls' policy: git's paths out of the
// protected list.
func gitUnprotected(ws string) sandbox.Policy {
	return sandbox.Policy{Workspace: ws, Protected: []string{".bashrc"}}
}

func defaultPolicy(ws string) sandbox.Policy { return sandbox.Policy{Workspace: ws} }

// runNested runs attack for each row in every container mode, in a fresh
// workspace, after the row's first call if it has one.
func runNested(t *testing.T, rows []nestedRow, attack func(t *testing.T, c *Backend, ws string, p sandbox.Policy, planted bool)) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			for _, tc := range rows {
				t.Run(tc.name, func(t *testing.T) {
					ws := protectWorkspace(t, true)
					p := tc.p(ws)
					if tc.early {
						if r, err := c.Run(context.Background(), p, []string{"true"}, nil); err != nil || !r.OK() {
							t.Fatalf("first call: %v %v", r, err)
						}
					}
					attack(t, c, ws, p, tc.planted)
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

// gitdirAt makes dir look like a repository's git directory (hooks,
// objects, config), as a submodule's under .git/modules or a worktree's
// repository a .git file names.
func gitdirAt(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"hooks", "objects"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n"), 0o644))
}

// nestedLayouts gives ws every kind of nested repository the search
// protects: a clone (vendor/lib/.git, a directory), its submodule (the
// checkout vendor/lib/sub with a .git file naming ../.git/modules/sub), a
// worktree whose .git file names a repository inside the workspace
// (vendor/wt, vendor/repos/wt.git) and one whose .git file names a
// repository outside it (out/.git). It returns the attack's targets,
// relative to ws: each a file git reads as the user (a hook, a config, a
// .git file it follows), which the attack appends to.
func nestedLayouts(t *testing.T, ws string) []string {
	t.Helper()
	gitdirAt(t, filepath.Join(ws, "vendor", "lib", ".git"))
	gitdirAt(t, filepath.Join(ws, "vendor", "lib", ".git", "modules", "sub"))
	must(t, os.MkdirAll(filepath.Join(ws, "vendor", "lib", "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "vendor", "lib", "sub", ".git"), []byte("gitdir: ../.git/modules/sub\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(ws, "vendor", "wt"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "vendor", "wt", ".git"), []byte("gitdir: ../repos/wt.git\n"), 0o644))
	gitdirAt(t, filepath.Join(ws, "vendor", "repos", "wt.git"))
	must(t, os.MkdirAll(filepath.Join(ws, "out"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "out", ".git"), []byte("gitdir: /srv/elsewhere\n"), 0o644))
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error {
		return os.Lchown(p, sandbox.DefaultUID, sandbox.DefaultUID)
	})
	return []string{
		"vendor/lib/.git/hooks/pre-commit",
		"vendor/lib/.git/config",
		"vendor/lib/.git/modules/sub/hooks/pre-commit",
		"vendor/lib/.git/modules/sub/config",
		"vendor/lib/sub/.git",
		"vendor/wt/.git",
		"vendor/repos/wt.git/hooks/pre-commit",
		"vendor/repos/wt.git/config",
		"out/.git",
	}
}

// plantEach is the attack on targets: it appends a line naming pwned to
// each and prints, one a line, the targets it could write.
func plantEach(targets []string) []string {
	script := `for f in "$@"; do echo pwned 2>/dev/null >> "$f" && echo "$f"; done; true`
	return append([]string{"sh", "-c", script, "sh"}, targets...)
}

// TestContainerNestedRepositoryLayouts is catalog row A52 for the
// container backends over every layout of a nested repository (a clone,
// its submodule's repository and checkout, a worktree's .git file and the
// repository it names, a .git file naming a repository outside the
// workspace), with its control: with git's paths out of the protected
// list every target is written on the host; with the default list none
// is, and the run says which it could not write — in a fresh container,
// a warm one, and a warm one made before the repositories existed.
func TestContainerNestedRepositoryLayouts(t *testing.T) {
	runNested(t, []nestedRow{
		{"control: git's paths not protected", gitUnprotected, false, true},
		{"control: git's paths not protected, warm container made first", gitUnprotected, true, true},
		{"default", defaultPolicy, false, false},
		{"default, repositories made after a first call", defaultPolicy, true, false},
	}, func(t *testing.T, c *Backend, ws string, p sandbox.Policy, planted bool) {
		targets := nestedLayouts(t, ws)
		r, err := c.Run(context.Background(), p, plantEach(targets), nil)
		if err != nil {
			t.Fatal(err)
		}
		wrote := strings.Fields(string(r.Stdout))
		for _, target := range targets {
			b, _ := os.ReadFile(filepath.Join(ws, filepath.FromSlash(target)))
			host := strings.Contains(string(b), "pwned")
			if host != planted || slices.Contains(wrote, target) != planted {
				t.Errorf("%s: written in the container %v, on the host %v; want %v (stderr %q)", target, slices.Contains(wrote, target), host, planted, r.Stderr)
			}
		}
	})
}

// TestContainerNestedRepositoryDepth checks that a container run whose
// workspace holds directories deeper than the search goes is refused,
// naming the bound, in every mode: a repository below that depth would be
// left writable.
func TestContainerNestedRepositoryDepth(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			ws := protectWorkspace(t, true)
			deep := ws
			for range sandbox.GitSearchDepth + 1 {
				deep = filepath.Join(deep, "d")
			}
			must(t, os.MkdirAll(deep, 0o755))
			_, err := c.Run(context.Background(), sandbox.Policy{Workspace: ws}, []string{"true"}, nil)
			if err == nil || !strings.Contains(err.Error(), "deep") || !strings.Contains(err.Error(), "GitSearchDepth") {
				t.Errorf("%d deep: %v, want a refusal naming the depth bound", sandbox.GitSearchDepth+1, err)
			}
			// Without git's paths protected nothing is searched.
			r, err := c.Run(context.Background(), sandbox.Policy{Workspace: ws, Protected: []string{".bashrc"}}, []string{"true"}, nil)
			if err != nil || !r.OK() {
				t.Errorf("without git's paths: %v %v", r, err)
			}
		})
	}
}

// TestContainerWarmNestedRetires checks that warm containers do not pile
// up as nested repositories appear: each call whose protected set changed
// gets a new warm container (its mounts are fixed when it starts), and the
// one made for the old set is removed, so a run that makes a repository
// each call (git init x1, x2 …) holds one warm container, not one per call.
func TestContainerWarmNestedRetires(t *testing.T) {
	for _, mode := range containerModes[1:] {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			ws := protectWorkspace(t, true)
			p := sandbox.Policy{Workspace: ws}
			ids := map[string]bool{}
			for i := range 4 {
				r, err := c.Run(context.Background(), p, []string{"sh", "-c", "mkdir -p x" + strconv.Itoa(i) + "/.git/hooks; cat /etc/hostname"}, nil)
				if err != nil || !r.OK() {
					t.Fatalf("call %d: %v %v", i, r, err)
				}
				ids[strings.TrimSpace(string(r.Stdout))] = true
				c.mu.Lock()
				live, slots := len(c.live), len(c.warm)
				c.mu.Unlock()
				if live != 1 || slots != 1 {
					t.Errorf("after call %d: %d containers, %d warm slots; want 1 and 1", i, live, slots)
				}
			}
			// Calls 2 to 4 each found a repository the one before made.
			if len(ids) != 4 {
				t.Errorf("%d warm containers over 4 calls whose protected set changed each time, want 4", len(ids))
			}
			// The next call finds x3 and gets a new container; the one
			// after it, with the same protected set, reuses that.
			var last []string
			for range 2 {
				r, err := c.Run(context.Background(), p, []string{"cat", "/etc/hostname"}, nil)
				if err != nil || !r.OK() {
					t.Fatalf("%v %v", r, err)
				}
				last = append(last, strings.TrimSpace(string(r.Stdout)))
			}
			if ids[last[0]] || last[0] != last[1] {
				t.Errorf("calls after x3 appeared ran in %q, want a new warm container, then the same one", last)
			}
		})
	}
}
