package container

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// protectWorkspace makes a workspace the sandbox user owns, with a
// repository (.git with hooks, config and objects) when git is true.
func protectWorkspace(t *testing.T, git bool) string {
	t.Helper()
	ws := t.TempDir()
	if git {
		for _, d := range []string{".git/hooks", ".git/objects"} {
			if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error {
		return os.Lchown(p, sandbox.DefaultUID, sandbox.DefaultUID)
	})
	return ws
}

// TestContainerProtectedChanged checks the comparison after a container
// run: a run that creates .git/hooks/pre-commit in a workspace without
// .git (no mount can cover a missing path) has it named in
// ProtectedChanged, while one that writes .git/objects under a protected
// .git reports nothing; moving .git aside is refused (its own mount
// point), and the result says nothing changed.
func TestContainerProtectedChanged(t *testing.T) {
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			for _, tc := range []struct {
				name string
				git  bool
				sh   string
				ok   bool
				want []string
			}{
				{"created", false, "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit", true, []string{".git/hooks"}},
				{"objects", true, "echo x > .git/objects/o1", true, nil},
				{"moved", true, "mv .git .git-old", false, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ws := protectWorkspace(t, tc.git)
					r, err := c.Run(context.Background(), sandbox.Policy{Workspace: ws}, []string{"sh", "-c", tc.sh}, nil)
					if err != nil {
						t.Fatal(err)
					}
					if r.OK() != tc.ok {
						t.Errorf("%q: %s %q, want ok %v", tc.sh, r.Summary(), r.Stderr, tc.ok)
					}
					if !slices.Equal(r.ProtectedChanged, tc.want) {
						t.Errorf("ProtectedChanged = %q, want %q", r.ProtectedChanged, tc.want)
					}
					if _, err := os.Stat(filepath.Join(ws, ".git-old")); err == nil {
						t.Error(".git was moved aside on the host")
					}
				})
			}
		})
	}
}

// TestWarmProtectHeld checks that a warm container is not trusted with a
// workspace whose protected directory the host replaced since it started:
// the kernel detaches the container's mount of the old one, and
// protectHeld, which holds the container's mount table against the
// protected binds, says so (the control: before the host's change it
// holds). The next call, in a new container, cannot move .git aside.
func TestWarmProtectHeld(t *testing.T) {
	for _, mode := range containerModes[1:] {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			ws := protectWorkspace(t, true)
			p := sandbox.Policy{Workspace: ws}
			if r, err := c.Run(context.Background(), p, []string{"true"}, nil); err != nil || !r.OK() {
				t.Fatalf("first call: %v %v", r, err)
			}
			img, _ := c.image(context.Background(), p)
			opts, err := c.create(p, p.ProtectedPaths(), img, mustEnviron(t, p), nil, false)
			if err != nil {
				t.Fatal(err)
			}
			s := c.slot(p, opts)
			held := c.protectHeld(context.Background(), s, opts)
			s.mu.Unlock()
			if !held {
				t.Fatal("control: the warm container's protected mounts are not found right after its first call")
			}
			// The host removes .git/hooks and makes it anew.
			if err := os.RemoveAll(filepath.Join(ws, ".git", "hooks")); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			held = c.protectHeld(context.Background(), s, opts)
			s.mu.Unlock()
			if held {
				t.Error("the container's mount of the removed .git/hooks still counts as held")
			}
			if err := os.Mkdir(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Lchown(filepath.Join(ws, ".git", "hooks"), sandbox.DefaultUID, sandbox.DefaultUID)
			r, err := c.Run(context.Background(), p, []string{"sh", "-c", "mv .git/hooks .git/hooks-old || exit 3; mkdir .git/hooks && echo x > .git/hooks/pre-commit"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != 3 || !strings.Contains(strings.ToLower(string(r.Stderr)), "busy") {
				t.Errorf("moving the new .git/hooks aside: %s %q, want refused (busy)", r.Summary(), r.Stderr)
			}
			if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "pre-commit")); err == nil {
				t.Error("a hook was planted on the host")
			}
		})
	}
}

func mustEnviron(t *testing.T, p sandbox.Policy) []string {
	t.Helper()
	env, err := p.Environ()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestUnescapeMountinfo checks the decoding of mount points as
// /proc/PID/mountinfo writes them.
func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/workspace/.git`:           "/workspace/.git",
		`/workspace/my\040dir/.git`: "/workspace/my dir/.git",
		`/a\134b`:                   `/a\b`,
		`/tail\04`:                  `/tail\04`,
		`/not\9999`:                 `/not\9999`,
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProtectMounts checks what a container binds for the protected
// paths: the directories above each as mount points of their own, the
// existing paths and a .git file read-only, nothing for a missing path,
// and a refusal for a path through a symbolic link (the engine would
// follow it on the host).
func TestProtectMounts(t *testing.T) {
	paths := []string{".git/hooks", ".git/config", ".claude/commands", ".vscode"}
	for _, tc := range []struct {
		name            string
		make            func(ws string) error
		parents, leaves []string
		err             string
	}{
		{"empty", func(string) error { return nil }, nil, nil, ""},
		{"repository", func(ws string) error {
			os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755)
			os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
			return os.WriteFile(filepath.Join(ws, ".git", "config"), nil, 0o644)
		}, []string{".git", ".claude"}, []string{".git/hooks", ".git/config"}, ""},
		{"git file", func(ws string) error {
			return os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: /elsewhere\n"), 0o644)
		}, nil, []string{".git"}, ""},
		{"symlinked parent", func(ws string) error {
			return os.Symlink("/", filepath.Join(ws, ".git"))
		}, nil, nil, "symbolic link"},
		{"symlinked leaf", func(ws string) error {
			return os.Symlink("/etc", filepath.Join(ws, ".vscode"))
		}, nil, nil, "symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if err := tc.make(ws); err != nil {
				t.Fatal(err)
			}
			parents, leaves, err := protectMounts(ws, paths)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(parents, tc.parents) || !slices.Equal(leaves, tc.leaves) {
				t.Errorf("parents %q leaves %q err %v, want %q %q", parents, leaves, err, tc.parents, tc.leaves)
			}
		})
	}
}

// TestContainerGitConfiguredHooks: the repository's own configuration
// moves its hooks (core.hooksPath, as husky sets it) or part of its
// configuration (include.path) into the working tree, and the container
// binds those read-only as it binds .git/hooks: a call cannot plant a
// hook git runs as the user. The control runs the same call with git's
// paths out of the protected list and finds the hook written on the host.
func TestContainerGitConfiguredHooks(t *testing.T) {
	t.Setenv("GIT_CONFIG_SYSTEM", os.DevNull)
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			for _, tc := range []struct {
				name      string
				protected []string
				planted   bool
			}{
				{"control: git's paths not protected", []string{".bashrc"}, true},
				{"default", nil, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ws := protectWorkspace(t, true)
					must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("[core]\n\thooksPath = .husky\n[include]\n\tpath = ../shared.gitconfig\n"), 0o644))
					must(t, os.MkdirAll(filepath.Join(ws, ".husky"), 0o755))
					must(t, os.WriteFile(filepath.Join(ws, ".husky", "pre-commit"), []byte("#!/bin/sh\n"), 0o755))
					must(t, os.WriteFile(filepath.Join(ws, "shared.gitconfig"), []byte("[alias]\n"), 0o644))
					filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error {
						return os.Lchown(p, sandbox.DefaultUID, sandbox.DefaultUID)
					})
					p := sandbox.Policy{Workspace: ws, Protected: tc.protected}
					r, err := c.Run(context.Background(), p, []string{"sh", "-c", "echo pwned >> .husky/pre-commit; echo pwned >> shared.gitconfig"}, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range []string{".husky/pre-commit", "shared.gitconfig"} {
						b, _ := os.ReadFile(filepath.Join(ws, f))
						if got := strings.Contains(string(b), "pwned"); got != tc.planted {
							t.Errorf("%s written on the host: %v, want %v (stderr %q)", f, got, tc.planted, r.Stderr)
						}
					}
					if !tc.planted && !strings.Contains(strings.ToLower(string(r.Stderr)), "read-only file system") {
						t.Errorf("stderr %q, want read-only file system", r.Stderr)
					}
				})
			}
		})
	}
}

// TestContainerProtectedHardLink: a container binds the workspace
// directly, so a second name of a protected file (a hard link in the
// workspace) is the protected file, writable where the read-only bind
// covers only its protected name. The control protects nothing and the
// write through the other name reaches .git/config; with the default list
// the run is refused before any container starts.
func TestContainerProtectedHardLink(t *testing.T) {
	t.Setenv("GIT_CONFIG_SYSTEM", os.DevNull)
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	for _, mode := range containerModes {
		t.Run(mode.name, func(t *testing.T) {
			c := requireEngineWith(t, mode.opts)
			for _, tc := range []struct {
				name      string
				protected []string
				planted   bool
			}{
				{"control: git's paths not protected", []string{".bashrc"}, true},
				{"default", nil, false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ws := protectWorkspace(t, true)
					must(t, os.Link(filepath.Join(ws, ".git", "config"), filepath.Join(ws, "notes.txt")))
					filepath.Walk(ws, func(p string, _ os.FileInfo, _ error) error {
						return os.Lchown(p, sandbox.DefaultUID, sandbox.DefaultUID)
					})
					p := sandbox.Policy{Workspace: ws, Protected: tc.protected}
					r, err := c.Run(context.Background(), p, []string{"sh", "-c", "echo pwned >> notes.txt"}, nil)
					b, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
					if got := strings.Contains(string(b), "pwned"); got != tc.planted {
						t.Errorf(".git/config changed on the host: %v, want %v (%v)", got, tc.planted, err)
					}
					if tc.planted && err != nil {
						t.Fatalf("the control's run failed: %v", err)
					}
					if !tc.planted && (err == nil || !strings.Contains(err.Error(), "hard link")) {
						t.Errorf("run: %v (result %+v); want it refused naming the hard link", err, r)
					}
				})
			}
		})
	}
}
