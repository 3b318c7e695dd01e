package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox"
)

// gitRepo lays out a git repository's directory at dir: what git looks
// for (HEAD, objects) and what it runs or obeys (hooks, config).
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{"hooks", "objects"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": "[core]\n\tbare = false\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writeHost writes text to ws/rel, making its directories.
func writeHost(t *testing.T, ws, rel, text string) {
	t.Helper()
	p := filepath.Join(ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCatalogGitThroughFileTools is catalog A's rows A46, A49 and A51 (the
// repositories git would use besides .git/hooks and .git/config:
// sandbox/catalog_linux_test.go) made with the file tools instead of a
// sandboxed command, and A52, nested repositories, which only the file
// tools refuse so far (a sandboxed run protects the workspace's own
// repository and those it leads to, not one cloned in a subdirectory). The sandbox keeps these paths read-only in a run
// (protected.Git), so the tools that write must refuse them too: git
// runs a planted hook, or a core.fsmonitor command, on the host, outside
// any sandbox, the next time the user runs it in the workspace.
//
// Each row: the attack, under the default protected paths, is refused
// as protected and the host-side check finds the target unchanged; the
// control, the same call in a workspace whose policy protects only
// .bashrc (no git paths), changes the target, so what refuses it is the
// git protection.
func TestCatalogGitThroughFileTools(t *testing.T) {
	const hook = "#!/bin/sh\ntouch PWNED\n"
	gitFile := func(t *testing.T, ws string) {
		writeHost(t, ws, ".git", "gitdir: modules/sub.git\n")
		gitRepo(t, filepath.Join(ws, "modules", "sub.git"))
	}
	submodule := func(t *testing.T, ws string) {
		gitRepo(t, filepath.Join(ws, ".git"))
		gitRepo(t, filepath.Join(ws, ".git", "modules", "lib", "sub"))
	}
	rows := []struct {
		id, name string
		setup    func(t *testing.T, ws string)
		tool     string
		args     any
		target   string // the path, relative to the workspace, the attack changes
	}{
		{id: "A46-files-1", name: "rewrite a .git file (worktree, submodule) to lead elsewhere", setup: gitFile,
			tool: "write_file", args: WriteArgs{Path: ".git", Content: "gitdir: /srv/evil\n"}, target: ".git"},
		{id: "A46-files-2", name: "plant a hook in the repository a .git file leads to inside the workspace", setup: gitFile,
			tool: "write_file", args: WriteArgs{Path: "modules/sub.git/hooks/pre-commit", Content: hook}, target: "modules/sub.git/hooks/pre-commit"},
		{id: "A46-files-3", name: "plant core.fsmonitor in the repository a .git file leads to, edited", setup: gitFile,
			tool: "edit_file", args: EditArgs{Path: "modules/sub.git/config", Old: "[core]", New: "[core]\n\tfsmonitor = touch PWNED"}, target: "modules/sub.git/config"},
		{id: "A46-files-4", name: "plant core.fsmonitor in a submodule's repository under .git/modules", setup: submodule,
			tool: "edit_file", args: EditArgs{Path: ".git/modules/lib/sub/config", Old: "[core]", New: "[core]\n\tfsmonitor = touch PWNED"}, target: ".git/modules/lib/sub/config"},
		{id: "A46-files-5", name: "plant a hook in a submodule's repository under .git/modules", setup: submodule,
			tool: "write_file", args: WriteArgs{Path: ".git/modules/lib/sub/hooks/post-checkout", Content: hook}, target: ".git/modules/lib/sub/hooks/post-checkout"},
		{id: "A46-files-6", name: "plant a hook through .git/hooks, a link to hooks kept elsewhere in the workspace (as repo's checkouts have)", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			os.RemoveAll(filepath.Join(ws, ".git", "hooks"))
			if err := os.MkdirAll(filepath.Join(ws, "store", "hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../store/hooks", filepath.Join(ws, ".git", "hooks")); err != nil {
				t.Fatal(err)
			}
		}, tool: "write_file", args: WriteArgs{Path: "store/hooks/pre-commit", Content: hook}, target: "store/hooks/pre-commit"},
		{id: "A46-files-7", name: "plant a hook where .git/hooks, a dangling link, leads, making its directories", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			os.RemoveAll(filepath.Join(ws, ".git", "hooks"))
			if err := os.Symlink("../store/hooks", filepath.Join(ws, ".git", "hooks")); err != nil {
				t.Fatal(err)
			}
		}, tool: "write_file", args: WriteArgs{Path: "store/hooks/pre-commit", Content: hook}, target: "store/hooks/pre-commit"},
		{id: "A46-files-8", name: "plant core.fsmonitor where .git, a link to the repository kept elsewhere in the workspace, leads", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, "store", "repo"))
			if err := os.Symlink("store/repo", filepath.Join(ws, ".git")); err != nil {
				t.Fatal(err)
			}
		}, tool: "edit_file", args: EditArgs{Path: "store/repo/config", Old: "[core]", New: "[core]\n\tfsmonitor = touch PWNED"}, target: "store/repo/config"},
		{id: "A46-files-9", name: "plant a hook in a submodule's repository under .git/modules, where .git is a link", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, "store", "repo"))
			gitRepo(t, filepath.Join(ws, "store", "repo", "modules", "sub"))
			if err := os.Symlink("store/repo", filepath.Join(ws, ".git")); err != nil {
				t.Fatal(err)
			}
		}, tool: "write_file", args: WriteArgs{Path: "store/repo/modules/sub/hooks/pre-push", Content: hook}, target: "store/repo/modules/sub/hooks/pre-push"},
		{id: "A51-files-1", name: "redirect git's common directory with .git/commondir", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			gitRepo(t, filepath.Join(ws, "modules", "evil"))
		}, tool: "write_file", args: WriteArgs{Path: ".git/commondir", Content: "../modules/evil\n"}, target: ".git/commondir"},
		{id: "A51-files-2", name: "plant .git/config.worktree", setup: func(t *testing.T, ws string) { gitRepo(t, filepath.Join(ws, ".git")) },
			tool: "write_file", args: WriteArgs{Path: ".git/config.worktree", Content: "[core]\n\tfsmonitor = touch PWNED\n"}, target: ".git/config.worktree"},
		{id: "A51-files-3", name: "redirect a submodule's repository with its commondir", setup: submodule,
			tool: "write_file", args: WriteArgs{Path: ".git/modules/lib/sub/commondir", Content: "../../../../modules/evil\n"}, target: ".git/modules/lib/sub/commondir"},
		{id: "A52-files-1", name: "plant core.fsmonitor in a nested repository's config", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			gitRepo(t, filepath.Join(ws, "vendor", "lib", ".git"))
		}, tool: "edit_file", args: EditArgs{Path: "vendor/lib/.git/config", Old: "[core]", New: "[core]\n\tfsmonitor = touch PWNED"}, target: "vendor/lib/.git/config"},
		{id: "A52-files-2", name: "plant a hook in a nested repository", setup: func(t *testing.T, ws string) { gitRepo(t, filepath.Join(ws, "vendor", "lib", ".git")) },
			tool: "write_file", args: WriteArgs{Path: "vendor/lib/.git/hooks/pre-commit", Content: hook}, target: "vendor/lib/.git/hooks/pre-commit"},
		{id: "A52-files-3", name: "rewrite a nested checkout's .git file (a submodule's)", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git", "modules", "lib"))
			writeHost(t, ws, "lib/.git", "gitdir: ../.git/modules/lib\n")
		}, tool: "write_file", args: WriteArgs{Path: "lib/.git", Content: "gitdir: ../evil\n"}, target: "lib/.git"},
		{id: "A52-files-4", name: "write into .GIT, .git in another case (the same directory where case is ignored)", setup: func(t *testing.T, ws string) { gitRepo(t, filepath.Join(ws, ".git")) },
			tool: "write_file", args: WriteArgs{Path: ".GIT/objects/info/alternates", Content: "/srv/evil/objects\n"}, target: ".GIT/objects/info/alternates"},
		{id: "A52-files-5", name: "plant a hook in the repository a nested checkout's .git file names inside the workspace", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, "store", "lib.git"))
			writeHost(t, ws, "vendor/lib/.git", "gitdir: ../../store/lib.git\n")
		}, tool: "write_file", args: WriteArgs{Path: "store/lib.git/hooks/pre-commit", Content: hook}, target: "store/lib.git/hooks/pre-commit"},
		{id: "A53-files-3", name: "plant a hook where a nested repository's core.hooksPath leads", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, "vendor", "lib", ".git"))
			writeHost(t, ws, "vendor/lib/.git/config", "[core]\n\thooksPath = .husky\n")
			writeHost(t, ws, "vendor/lib/.husky/pre-commit", "#!/bin/sh\nnpm test\n")
		}, tool: "write_file", args: WriteArgs{Path: "vendor/lib/.husky/pre-commit", Content: hook}, target: "vendor/lib/.husky/pre-commit"},
		{id: "A53-files-1", name: "plant a hook where the repository's core.hooksPath leads (husky's .husky)", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			writeHost(t, ws, ".git/config", "[core]\n\thooksPath = .husky\n")
			writeHost(t, ws, ".husky/pre-commit", "#!/bin/sh\nnpm test\n")
		}, tool: "write_file", args: WriteArgs{Path: ".husky/pre-commit", Content: hook}, target: ".husky/pre-commit"},
		{id: "A53-files-2", name: "plant core.fsmonitor in a file the repository's config includes", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			writeHost(t, ws, ".git/config", "[include]\n\tpath = ../team.gitconfig\n")
			writeHost(t, ws, "team.gitconfig", "[core]\n")
		}, tool: "edit_file", args: EditArgs{Path: "team.gitconfig", Old: "[core]", New: "[core]\n\tfsmonitor = touch PWNED"}, target: "team.gitconfig"},
		{id: "A55-files-1", name: "rewrite the script core.fsmonitor runs", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			writeHost(t, ws, ".git/config", "[core]\n\tfsmonitor = ./tools/watch.sh\n")
			writeHost(t, ws, "tools/watch.sh", "#!/bin/sh\n")
		}, tool: "write_file", args: WriteArgs{Path: "tools/watch.sh", Content: hook}, target: "tools/watch.sh"},
		{id: "A55-files-2", name: "rewrite a husky 9 hook (core.hooksPath .husky/_ runs .husky/pre-commit)", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			writeHost(t, ws, ".git/config", "[core]\n\thooksPath = .husky/_\n")
			writeHost(t, ws, ".husky/_/pre-commit", "#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n")
			writeHost(t, ws, ".husky/pre-commit", "npm test\n")
		}, tool: "write_file", args: WriteArgs{Path: ".husky/pre-commit", Content: hook}, target: ".husky/pre-commit"},
		{id: "A55-files-3", name: "add a local hook to the pre-commit framework's configuration", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, ".git"))
			writeHost(t, ws, ".git/hooks/pre-commit", "#!/usr/bin/env bash\nARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)\n")
			writeHost(t, ws, ".pre-commit-config.yaml", "repos: []\n")
		}, tool: "edit_file", args: EditArgs{Path: ".pre-commit-config.yaml", Old: "repos: []", New: "repos: [{repo: local, hooks: [{id: x, name: x, entry: touch PWNED, language: system}]}]"}, target: ".pre-commit-config.yaml"},
		{id: "A55-files-4", name: "plant a hook where the enclosing repository's core.hooksPath leads into the workspace", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(filepath.Dir(ws), ".git"))
			writeHost(t, filepath.Dir(ws), ".git/config", "[core]\n\thooksPath = ws/hooks\n")
			writeHost(t, ws, "hooks/pre-commit", "#!/bin/sh\n")
		}, tool: "write_file", args: WriteArgs{Path: "hooks/pre-commit", Content: hook}, target: "hooks/pre-commit"},
		{id: "A49-files-1", name: "write a .git file naming a repository in a workspace without .git", setup: func(t *testing.T, ws string) {
			gitRepo(t, filepath.Join(ws, "modules", "evil"))
			writeHost(t, ws, "modules/evil/hooks/pre-commit", hook)
		}, tool: "write_file", args: WriteArgs{Path: ".git", Content: "gitdir: modules/evil\n"}, target: ".git"},
	}
	for _, row := range rows {
		t.Run(row.id+" "+row.name, func(t *testing.T) {
			for _, control := range []bool{false, true} {
				ws := filepath.Join(t.TempDir(), "ws")
				if err := os.Mkdir(ws, 0o755); err != nil {
					t.Fatal(err)
				}
				row.setup(t, ws)
				before, _ := os.ReadFile(filepath.Join(ws, row.target))
				p := sandbox.Policy{Workspace: ws}
				if control {
					p.Protected = []string{".bashrc"}
				}
				ts, err := New(p)
				if err != nil {
					t.Fatal(err)
				}
				e := &env{ws: ws, ts: ts}
				r := e.call(t, row.tool, row.args)
				ts.Close()
				after, _ := os.ReadFile(filepath.Join(ws, row.target))
				changed := string(after) != string(before)
				if control {
					if r.IsError || !changed {
						t.Fatalf("control (git paths not protected): %s did not change %s: %+v", row.tool, row.target, r)
					}
					continue
				}
				if !r.IsError || !strings.Contains(r.Error, "protected") {
					t.Errorf("attack: %s = %+v, want a refusal as protected", row.tool, r)
				}
				if changed {
					t.Errorf("attack: %s changed to %q", row.target, after)
				}
				// The protection refuses the attack, not every write.
				if ts, err = New(p); err != nil {
					t.Fatal(err)
				}
				e.ts = ts
				if r := e.call(t, "write_file", WriteArgs{Path: "notes/todo.txt", Content: "ok"}); r.IsError {
					t.Errorf("a plain write in the same workspace: %+v", r)
				}
				ts.Close()
			}
		})
	}
}

// TestProtectedLinkLoop: a protected path whose links cannot be followed
// (a loop) cannot be judged, so every write is refused, as the sandbox
// refuses to run in such a workspace; the control, a workspace whose
// policy does not protect that path, writes.
func TestProtectedLinkLoop(t *testing.T) {
	for _, control := range []bool{false, true} {
		ws := t.TempDir()
		if err := os.Symlink(".vscode", filepath.Join(ws, ".vscode")); err != nil {
			t.Fatal(err)
		}
		p := sandbox.Policy{Workspace: ws}
		if control {
			p.Protected = []string{".bashrc"}
		}
		ts, err := New(p)
		if err != nil {
			t.Fatal(err)
		}
		e := &env{ws: ws, ts: ts}
		r := e.call(t, "write_file", WriteArgs{Path: "notes.txt", Content: "x"})
		ts.Close()
		_, statErr := os.Stat(filepath.Join(ws, "notes.txt"))
		if control {
			if r.IsError || statErr != nil {
				t.Errorf("control: %+v", r)
			}
			continue
		}
		if !r.IsError || !strings.Contains(r.Error, "cannot be judged") || statErr == nil {
			t.Errorf("a loop at the protected .vscode: %+v (file: %v), want every write refused", r, statErr)
		}
	}
}
