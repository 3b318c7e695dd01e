package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox/internal/protected"
)

// gitInit makes a real repository at dir with git init, owned by the
// sandbox user like the rest of the fixture's workspace.
func gitInit(t *testing.T, ws, dir string) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git, which the nested repository attack needs, is not installed:", err)
	}
	must(t, os.MkdirAll(dir, 0o755))
	if out, err := exec.Command(git, "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	chownAll(t, ws)
}

// TestNestedRepositoryAttack is catalog row A52 with its control: a run
// plants a pre-commit hook and core.fsmonitor in a repository cloned in a
// subdirectory of the workspace (made by git init), which git would run
// as the user the next time the user runs it there. With git's paths out
// of the protected list (the protection off) the run writes them and they
// reach the host; with the default list it cannot, through the write
// budget's overlay and through a workspace bound directly.
func TestNestedRepositoryAttack(t *testing.T) {
	f := newFixture(t)
	repo := filepath.Join(f.ws, "vendor", "lib")
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	config := filepath.Join(repo, ".git", "config")
	for _, tc := range plantCases {
		t.Run(tc.name, func(t *testing.T) {
			must(t, os.RemoveAll(filepath.Join(f.ws, "vendor")))
			gitInit(t, f.ws, repo)
			p := f.policy()
			tc.policy(&p)
			for _, attack := range [][]string{{"write", hook}, {"append", config}} {
				r := f.sandboxed(t, context.Background(), DefaultNative(), p, attack...)
				out := string(r.Stdout)
				if tc.planted && !strings.HasPrefix(out, "OK") {
					t.Errorf("%v: the control's run could not write: %q %q", attack, out, trim(r.Stderr))
				}
				if !tc.planted && (!strings.HasPrefix(out, "BLOCKED") || !strings.Contains(strings.ToLower(out), "read-only file system")) {
					t.Errorf("%v: %q (stderr %q), want BLOCKED read-only file system", attack, out, trim(r.Stderr))
				}
			}
			if got := exists(hook)() || fileHas(config, "pwned")(); got != tc.planted {
				t.Errorf("hook or config planted on the host: %v, want %v", got, tc.planted)
			}
		})
	}
}

// TestNestedRepositoryLimit checks that a workspace the search for nested
// repositories cannot finish is refused, naming the limit and the option,
// and that raising the option runs it.
func TestNestedRepositoryLimit(t *testing.T) {
	f := newFixture(t)
	for i := range 40 {
		must(t, os.WriteFile(filepath.Join(f.ws, "f"+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o644))
	}
	p := f.policy()
	p.Limits.GitSearch = 16
	_, err := DefaultNative().Run(context.Background(), p, []string{f.attacker, "status"}, nil)
	if err == nil || !strings.Contains(err.Error(), "more than 16 entries") || !strings.Contains(err.Error(), "Limits.GitSearch") {
		t.Errorf("16 entries: %v, want a refusal naming the limit and Limits.GitSearch", err)
	}
	p.Limits.GitSearch = 1000
	if r := f.sandboxed(t, context.Background(), DefaultNative(), p, "status"); !strings.HasPrefix(string(r.Stdout), "OK") {
		t.Errorf("1000 entries: %q %q", r.Stdout, trim(r.Stderr))
	}
	deep := f.ws
	for range GitSearchDepth + 1 {
		deep = filepath.Join(deep, "d")
	}
	must(t, os.MkdirAll(deep, 0o755))
	_, err = DefaultNative().Run(context.Background(), p, []string{f.attacker, "status"}, nil)
	if err == nil || !strings.Contains(err.Error(), "deep") {
		t.Errorf("%d deep: %v, want a refusal naming the depth", GitSearchDepth+1, err)
	}
	// Without git's paths protected nothing is searched.
	p.Protected = []string{".bashrc"}
	if r := f.sandboxed(t, context.Background(), DefaultNative(), p, "status"); !strings.HasPrefix(string(r.Stdout), "OK") {
		t.Errorf("without git's paths: %q %q", r.Stdout, trim(r.Stderr))
	}
}

// TestNestedProtected checks which paths the search for nested
// repositories adds: each nested repository's (a .git directory or file),
// the repository a nested .git file names inside the workspace, its
// submodules' repositories; nothing through a symbolic link or inside a
// .git; and its bounds.
func TestNestedProtected(t *testing.T) {
	ws := t.TempDir()
	gitdirLayout(t, filepath.Join(ws, ".git"))
	gitdirLayout(t, filepath.Join(ws, ".git", "x", ".git")) // inside .git: not a working tree
	gitdirLayout(t, filepath.Join(ws, "vendor", "lib", ".git"))
	gitdirLayout(t, filepath.Join(ws, "vendor", "lib", ".git", "modules", "sub"))
	must(t, os.MkdirAll(filepath.Join(ws, "wt"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "wt", ".git"), []byte("gitdir: ../repos/wt.git\n"), 0o644))
	gitdirLayout(t, filepath.Join(ws, "repos", "wt.git"))
	must(t, os.MkdirAll(filepath.Join(ws, "out"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "out", ".git"), []byte("gitdir: /srv/elsewhere\n"), 0o644))
	outside := t.TempDir()
	gitdirLayout(t, filepath.Join(outside, "r", ".git"))
	must(t, os.Symlink(outside, filepath.Join(ws, "link")))
	bounds := protected.Bounds{Entries: 1000, Depth: 8}
	got, err := protected.Nested(ws, []string{".git/hooks"}, bounds)
	must(t, err)
	want := []string{".git/hooks"}
	for _, r := range []string{"out/.git", "vendor/lib/.git", "vendor/lib/.git/modules/sub", "wt/.git", "repos/wt.git"} {
		want = append(want, repoLeaves(r)...)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got, err := protected.Nested(ws, []string{".bashrc"}, protected.Bounds{}); err != nil || !slices.Equal(got, []string{".bashrc"}) {
		t.Errorf("without git's paths: %q %v", got, err)
	}
	var le *protected.LimitError
	if _, err := protected.Nested(ws, []string{".git/config"}, protected.Bounds{Entries: 5, Depth: 8}); !errors.As(err, &le) || le.Limit != "entries" {
		t.Errorf("5 entries: %v, want the entries limit", err)
	}
	if _, err := protected.Nested(ws, []string{".git/config"}, protected.Bounds{Entries: 1000, Depth: 1}); !errors.As(err, &le) || le.Limit != "depth" {
		t.Errorf("depth 1: %v, want the depth limit", err)
	}
}
