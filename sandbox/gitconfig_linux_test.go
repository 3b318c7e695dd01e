package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox/internal/protected"
)

// gitHome gives git, and the protected paths' look at git's
// configuration, a home of the test's own with no global or system
// configuration, so that the host's does not change what is protected.
func gitHome(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_SYSTEM", os.DevNull)
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGitConfiguredHooksAttack: the user's own repository configuration
// moves git's hooks or configuration into the working tree, where the
// protected list did not look: core.hooksPath (husky and its kind set it
// to a directory of the working tree; git then runs the hooks there, not
// .git/hooks) and include.path (a file of the working tree whose
// settings, core.fsmonitor included, are the repository's). A run that
// writes a hook there, or core.fsmonitor into the included file, has its
// code run by git as the user. The control, with git's paths out of the
// protected list, shows the attack reaching the host; with the default
// list it is refused, through the write budget's overlay and through a
// workspace bound directly.
func TestGitConfiguredHooksAttack(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	layouts := []struct {
		name   string
		config func(t *testing.T)
		target string // the file the run writes, relative to the workspace
	}{
		{"core.hooksPath", func(t *testing.T) {
			gitIn(t, f.ws, "config", "core.hooksPath", ".husky")
			must(t, os.MkdirAll(filepath.Join(f.ws, ".husky"), 0o755))
			must(t, os.WriteFile(filepath.Join(f.ws, ".husky", "pre-commit"), []byte("#!/bin/sh\nnpm test\n"), 0o755))
		}, ".husky/pre-commit"},
		{"core.hooksPath .husky/_ (husky 9: its shims run the parent's scripts)", func(t *testing.T) {
			huskyLayout(t, f.ws)
		}, ".husky/pre-commit"},
		{"core.hooksPath, absolute, hook not there yet", func(t *testing.T) {
			gitIn(t, f.ws, "config", "core.hooksPath", filepath.Join(f.ws, "tools", "hooks"))
			must(t, os.MkdirAll(filepath.Join(f.ws, "tools", "hooks"), 0o755))
		}, "tools/hooks/post-checkout"},
		{"include.path", func(t *testing.T) {
			gitIn(t, f.ws, "config", "include.path", "../shared.gitconfig")
			must(t, os.WriteFile(filepath.Join(f.ws, "shared.gitconfig"), []byte("[alias]\n\tst = status\n"), 0o644))
		}, "shared.gitconfig"},
		{"includeIf.path in an included file", func(t *testing.T) {
			gitIn(t, f.ws, "config", "include.path", "../a.gitconfig")
			must(t, os.WriteFile(filepath.Join(f.ws, "a.gitconfig"), []byte("[includeIf \"gitdir:/\"]\n\tpath = conf/b.gitconfig ; a comment\n"), 0o644))
			must(t, os.MkdirAll(filepath.Join(f.ws, "conf"), 0o755))
			must(t, os.WriteFile(filepath.Join(f.ws, "conf", "b.gitconfig"), []byte("[alias]\n\tst = status\n"), 0o644))
		}, "conf/b.gitconfig"},
	}
	for _, l := range layouts {
		for _, tc := range plantCases {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				for _, e := range []string{".git", ".husky", "tools", "shared.gitconfig", "a.gitconfig", "conf"} {
					must(t, os.RemoveAll(filepath.Join(f.ws, e)))
				}
				gitInit(t, f.ws, f.ws)
				l.config(t)
				chownAll(t, f.ws)
				target := filepath.Join(f.ws, l.target)
				attack := "write"
				if _, err := os.Stat(target); err == nil {
					attack = "append"
				}
				p := f.policy()
				tc.policy(&p)
				f.plantAttempt(t, p, attack, target, l.target, tc.planted)
			})
		}
	}
}

// TestGitConfiguredPaths checks the paths the look at git's configuration
// adds against git's own answer: where `git rev-parse --git-path hooks`
// says the hooks are, and each file `git config --list --show-origin`
// read inside the workspace, must be protected; and the refusals: a
// relative hooks path of a repository whose working tree is not known, a
// hooks path naming the workspace itself, an include loop is read once.
func TestGitConfiguredPaths(t *testing.T) {
	gitHome(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git, which this test compares with, is not installed:", err)
	}
	for _, tc := range []struct {
		name   string
		config string // the repository's .git/config, after [core]
		files  map[string]string
		global string // the global configuration
	}{
		{name: "relative hooks path", config: "\thooksPath = .husky/_\n"},
		{name: "quoted, with a comment", config: "\thooksPath = \"dev hooks\" # where husky puts them\n"},
		{name: "escaped and continued", config: "\thooksPath = ho\\\noks\\\\x\n"},
		{name: "in the global configuration", global: "[core]\n\thooksPath = .githooks\n"},
		{name: "global, through ~", global: "[core]\n\thooksPath = ~/hooks\n"},
		{name: "include chain", config: "[include]\n\tpath = ../i1\n", files: map[string]string{"i1": "[include]\n\tpath = sub/i2\n", "sub/i2": "[core]\n\thooksPath = from-i2\n"}},
		{name: "section and key in any case", config: "[CORE]\n\tHOOKSPATH = upper\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q")
			b, err := os.ReadFile(filepath.Join(ws, ".git", "config"))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(strings.Replace(string(b), "[core]\n", "[core]\n"+tc.config, 1)), 0o644))
			for name, text := range tc.files {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
				must(t, os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644))
			}
			if tc.global != "" {
				// The home is the workspace here, so that ~/hooks lies in it.
				t.Setenv("HOME", ws)
				t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(ws, "global.gitconfig"))
				must(t, os.WriteFile(filepath.Join(ws, "global.gitconfig"), []byte(tc.global), 0o644))
			}
			got := mustGit(t, ws, DefaultProtected())
			hooks := gitIn(t, ws, "rev-parse", "--git-path", "hooks")
			if !filepath.IsAbs(hooks) {
				hooks = filepath.Join(ws, hooks)
			}
			rel, err := filepath.Rel(ws, hooks)
			must(t, err)
			if !slices.Contains(got, filepath.ToSlash(rel)) {
				t.Errorf("git runs hooks from %s, not protected: %q", rel, got)
			}
			for line := range strings.Lines(gitIn(t, ws, "config", "--list", "--show-origin", "--includes")) {
				origin, _, _ := strings.Cut(line, "\t")
				file, ok := strings.CutPrefix(origin, "file:")
				if !ok {
					continue
				}
				if !filepath.IsAbs(file) {
					file = filepath.Join(ws, file)
				}
				rel, err := filepath.Rel(ws, file)
				if err != nil || !filepath.IsLocal(rel) || rel == ".git/config" || tc.global != "" && rel == "global.gitconfig" {
					continue
				}
				if !slices.Contains(got, filepath.ToSlash(rel)) {
					t.Errorf("git reads configuration from %s, not protected: %q", rel, got)
				}
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, config, want string
		}{
			{"the workspace as hooks path", "[core]\n\thooksPath = .\n", "the workspace itself"},
			{"a submodule's relative hooks path, no working tree", "", "relative to a working tree"},
			{"a configuration over its bound", "", "over"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ws := t.TempDir()
				gitdirLayout(t, filepath.Join(ws, ".git"))
				switch tc.name {
				case "the workspace as hooks path":
					must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(tc.config), 0o644))
				case "a submodule's relative hooks path, no working tree":
					gitdirLayout(t, filepath.Join(ws, ".git", "modules", "m"))
					must(t, os.WriteFile(filepath.Join(ws, ".git", "modules", "m", "config"), []byte("[core]\n\thooksPath = h\n"), 0o644))
				case "a configuration over its bound":
					must(t, os.WriteFile(filepath.Join(ws, ".git", "config"), []byte("#"+strings.Repeat("x", 1<<20)+"\n"), 0o644))
				}
				_, err := protected.Git(ws, DefaultProtected())
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%v, want an error saying %q", err, tc.want)
				}
			})
		}
	})
}

// TestGitSubmoduleBoundAttack: the look for submodules' repositories under
// .git/modules stopped quietly at its bound (64 repositories), so the
// hooks and config of every submodule past it were left writable. Past
// the bound the run must be refused; within it a submodule's hooks are
// protected; the control, with git's paths out of the protected list,
// shows the write reaching the host.
func TestGitSubmoduleBoundAttack(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	layout := func(t *testing.T, n int) string {
		t.Helper()
		must(t, os.RemoveAll(filepath.Join(f.ws, ".git")))
		gitdirLayout(t, filepath.Join(f.ws, ".git"))
		for i := range n {
			gitdirLayout(t, filepath.Join(f.ws, ".git", "modules", fmt.Sprintf("m%04d", i)))
		}
		chownAll(t, f.ws)
		return filepath.Join(f.ws, ".git", "modules", fmt.Sprintf("m%04d", n-1), "hooks", "post-checkout")
	}
	t.Run("control: git's paths not protected", func(t *testing.T) {
		hook := layout(t, 300)
		p := f.policy()
		p.Protected = []string{".bashrc"}
		if r := f.sandboxed(t, context.Background(), DefaultNative(), p, "write", hook); !strings.HasPrefix(string(r.Stdout), "OK") || !fileHas(hook, "pwned")() {
			t.Fatalf("the control could not plant the hook: %q %q", r.Stdout, trim(r.Stderr))
		}
	})
	t.Run("within the bound", func(t *testing.T) {
		hook := layout(t, 200)
		r := f.sandboxed(t, context.Background(), DefaultNative(), f.policy(), "write", hook)
		if !strings.Contains(strings.ToLower(string(r.Stdout)), "read-only file system") || exists(hook)() {
			t.Errorf("the 200th submodule's hook: %q (stderr %q), want BLOCKED read-only file system", r.Stdout, trim(r.Stderr))
		}
	})
	t.Run("past the bound", func(t *testing.T) {
		hook := layout(t, 300)
		_, err := DefaultNative().Run(context.Background(), f.policy(), []string{f.attacker, "write", hook}, nil)
		if err == nil || !strings.Contains(err.Error(), "submodules' repositories") || !strings.Contains(err.Error(), "refusing to run") {
			t.Errorf("%v, want the run refused naming the submodules' bound", err)
		}
		if exists(hook)() {
			t.Error("the hook past the bound was planted")
		}
	})
}

// TestGitConfiguredCommandsAttack: the repository's configuration names
// a command git runs (core.fsmonitor at every status, a clean filter at
// every add, a '!' alias, a textconv driver, an ssh command's
// configuration file, a library preloaded into a credential helper),
// and that command is, or reads, a file of the working tree. A run that
// rewrites the file has its code run by git as the user. The control,
// with git's paths out of the protected list, shows the write reaching
// the host; with the default list the file is protected, through the
// write budget's overlay and through a workspace bound directly.
func TestGitConfiguredCommandsAttack(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	layouts := []struct {
		name, key, value string
		target           string // the file the run writes, relative to the workspace
		exists           bool   // the file is there before the run
	}{
		{"core.fsmonitor", "core.fsmonitor", "./tools/watch.sh", "tools/watch.sh", true},
		{"core.fsmonitor, not there yet", "core.fsmonitor", "tools/watch.sh", "tools/watch.sh", false},
		{"a clean filter's script", "filter.lfs.clean", "sh scripts/clean.sh %f", "scripts/clean.sh", true},
		{"a '!' alias", "alias.t", "!./bin/t && git status", "bin/t", true},
		{"a textconv driver's script, a plain word", "diff.img.textconv", "python3 conv.py", "conv.py", true},
		{"an ssh command's configuration", "core.sshCommand", "ssh -F ./ssh_config", "ssh_config", true},
		{"a library preloaded into a credential helper", "credential.helper", "!LD_PRELOAD=lib/x.so git credential-store", "lib/x.so", false},
		{"a gpg program's path", "gpg.program", "tools/gpg", "tools/gpg", true},
	}
	for _, l := range layouts {
		for _, tc := range plantCases {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				ents, _ := os.ReadDir(f.ws)
				for _, e := range ents {
					must(t, os.RemoveAll(filepath.Join(f.ws, e.Name())))
				}
				gitInit(t, f.ws, f.ws)
				gitIn(t, f.ws, "config", l.key, l.value)
				target := filepath.Join(f.ws, l.target)
				must(t, os.MkdirAll(filepath.Dir(target), 0o755))
				attack := "write"
				if l.exists {
					must(t, os.WriteFile(target, []byte("#!/bin/sh\nexit 0\n"), 0o755))
					attack = "append"
				}
				chownAll(t, f.ws)
				p := f.policy()
				tc.policy(&p)
				r := f.sandboxed(t, context.Background(), DefaultNative(), p, attack, target)
				out := string(r.Stdout)
				if tc.planted && !strings.HasPrefix(out, "OK") {
					t.Fatalf("the control's run could not write %s: %q %q", l.target, out, trim(r.Stderr))
				}
				if tc.planted {
					return
				}
				// A file not there yet has nothing to cover read-only: the
				// overlay never applies it, and a workspace bound directly
				// keeps it and says so (as for .git/hooks/pre-commit in a
				// workspace without .git).
				direct := slices.Contains(p.Without, LayerWriteBudget)
				if got := fileHas(target, "pwned")(); got && (l.exists || !direct) {
					t.Errorf("%s planted on the host: %q (stderr %q)", l.target, out, trim(r.Stderr))
				}
				if l.exists && (!strings.HasPrefix(out, "BLOCKED") || !strings.Contains(strings.ToLower(out), "read-only file system")) {
					t.Errorf("%s: %q (stderr %q), want BLOCKED read-only file system", l.target, out, trim(r.Stderr))
				}
				if !l.exists && !slices.Contains(r.ProtectedChanged, l.target) && !slices.ContainsFunc(r.ProtectedChanged, func(s string) bool { return strings.Contains(s, l.target) }) {
					t.Errorf("%s made in the run, not reported: ProtectedChanged %q", l.target, r.ProtectedChanged)
				}
			})
		}
	}
}

// TestGitConfiguredCommands holds the commands the look at git's
// configuration protects to what git itself runs: each row sets a key to
// a script of the working tree, makes git run it (a marker file shows it
// ran: the key is one git runs, from where the row says), and wants that
// script among the protected paths; and the values it cannot judge
// refuse the run.
func TestGitConfiguredCommands(t *testing.T) {
	gitHome(t)
	for _, e := range []string{"GIT_EDITOR", "VISUAL", "EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS"} {
		t.Setenv(e, "") // restored when the test ends
		os.Unsetenv(e)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git, which this test compares with, is not installed:", err)
	}
	for _, tc := range []struct {
		name, key, value string
		script           string                        // the file git runs, relative to the working tree
		run              func(t *testing.T, ws string) // makes git run it
	}{
		{"core.fsmonitor at status", "core.fsmonitor", "./tools/watch.sh", "tools/watch.sh", func(t *testing.T, ws string) { gitTry(ws, "status") }},
		{"a '!' alias", "alias.t", "!sh scripts/t.sh", "scripts/t.sh", func(t *testing.T, ws string) { gitTry(ws, "t") }},
		{"a clean filter at add", "filter.x.clean", "./f/clean.sh %f", "f/clean.sh", func(t *testing.T, ws string) {
			must(t, os.WriteFile(filepath.Join(ws, ".gitattributes"), []byte("*.dat filter=x\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(ws, "a.dat"), []byte("x\n"), 0o644))
			gitTry(ws, "add", "a.dat")
		}},
		{"an editor at commit", "core.editor", "ed/edit.sh", "ed/edit.sh", func(t *testing.T, ws string) { gitTry(ws, "commit", "--allow-empty", "-q") }},
		{"a credential helper", "credential.helper", "!./cred.sh", "cred.sh", func(t *testing.T, ws string) {
			cmd := exec.Command("git", "-c", "safe.directory=*", "-C", ws, "credential", "fill")
			cmd.Stdin = strings.NewReader("protocol=https\nhost=example.invalid\n\n")
			cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
			cmd.Run()
		}},
		{"an ssh command", "core.sshCommand", "./bin/ssh", "bin/ssh", func(t *testing.T, ws string) { gitTry(ws, "ls-remote", "ssh://example.invalid/x") }},
		{"an external diff", "diff.external", "./d/diff.sh", "d/diff.sh", func(t *testing.T, ws string) {
			must(t, os.WriteFile(filepath.Join(ws, "b.txt"), []byte("1\n"), 0o644))
			gitTry(ws, "add", "b.txt")
			must(t, os.WriteFile(filepath.Join(ws, "b.txt"), []byte("2\n"), 0o644))
			gitTry(ws, "diff")
		}},
		{"a plain word given to an interpreter", "alias.p", "!sh p.sh", "p.sh", func(t *testing.T, ws string) { gitTry(ws, "p") }},
		{"a function alias", "alias.fn", "!f() { sh ./fn/run.sh \"$@\"; }; f", "fn/run.sh", func(t *testing.T, ws string) { gitTry(ws, "fn", "x") }},
		{"a gpg program at a signed commit", "gpg.program", "./g/gpg", "g/gpg", func(t *testing.T, ws string) { gitTry(ws, "commit", "--allow-empty", "-S", "-m", "x", "-q") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q")
			gitIn(t, ws, "config", "user.name", "t")
			gitIn(t, ws, "config", "user.email", "t@example.invalid")
			gitIn(t, ws, "config", tc.key, tc.value)
			marker := filepath.Join(t.TempDir(), "ran")
			script := filepath.Join(ws, tc.script)
			must(t, os.MkdirAll(filepath.Dir(script), 0o755))
			must(t, os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\ncat >/dev/null 2>&1 </dev/null\nexit 1\n"), 0o755))
			tc.run(t, ws)
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("git did not run %s for %s = %q: the row does not show what git runs", tc.script, tc.key, tc.value)
			}
			if got := mustGit(t, ws, DefaultProtected()); !slices.Contains(got, tc.script) {
				t.Errorf("git runs %s (%s = %q), not protected: %q", tc.script, tc.key, tc.value, got)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		for _, value := range []string{
			"sh -c \"$(cat .watch)\"",
			"./tools/$HOSTNAME.sh",
			"sh `cat x`",
			"sh < tools/in.sh",
			"sh tools/*.sh",
			"f() ( ./x.sh ); f",
			"sh x.sh{a,b}",
			"sh tools\\/x.sh",
			"sh 'unterminated",
		} {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q")
			gitIn(t, ws, "config", "core.fsmonitor", value)
			if _, err := protected.Git(ws, DefaultProtected()); err == nil || !strings.Contains(err.Error(), "cannot judge") {
				t.Errorf("core.fsmonitor = %q: %v, want the run refused as a command it cannot judge", value, err)
			}
		}
	})
	t.Run("left alone", func(t *testing.T) {
		// Values that run nothing of the working tree add nothing.
		ws := t.TempDir()
		gitIn(t, ws, "init", "-q")
		before := mustGit(t, ws, DefaultProtected())
		for _, kv := range [][2]string{{"core.fsmonitor", "true"}, {"core.pager", "less -FRX"}, {"alias.st", "status -sb"},
			{"credential.helper", "cache --timeout=3600"}, {"filter.lfs.clean", "git-lfs clean -- %f"}, {"alias.l", "!git log \"$@\""},
			{"alias.c", "!f() { git commit -m \"$1\"; }; f"}, {"core.sshCommand", "ssh -o ControlPath=~/.ssh/%C"}} {
			gitIn(t, ws, "config", kv[0], kv[1])
		}
		got := mustGit(t, ws, DefaultProtected())
		for _, p := range got {
			if !slices.Contains(before, p) {
				t.Errorf("protected %q for a setting that runs nothing of the working tree: %q", p, got)
			}
		}
	})
}

// gitTry runs git in ws, ignoring how it ends (the scripts the rows make
// it run fail on purpose).
func gitTry(ws string, args ...string) {
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...)
	cmd.Stdin = strings.NewReader("")
	cmd.Run()
}

// huskyLayout gives the repository at ws husky 9's layout: core.hooksPath
// is .husky/_, whose hooks are shims that run the script of the same
// name in .husky (when there is one), and .husky/pre-commit is the
// project's hook.
func huskyLayout(t *testing.T, ws string) {
	t.Helper()
	gitIn(t, ws, "config", "core.hooksPath", ".husky/_")
	must(t, os.MkdirAll(filepath.Join(ws, ".husky", "_"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".husky", "_", "h"), []byte("#!/bin/sh\ns=\"$(dirname \"$(dirname \"$0\")\")/$(basename \"$0\")\"\n[ -f \"$s\" ] || exit 0\nexec sh -e \"$s\" \"$@\"\n"), 0o755))
	for _, hook := range []string{"pre-commit", "post-checkout"} {
		must(t, os.WriteFile(filepath.Join(ws, ".husky", "_", hook), []byte("#!/bin/sh\n. \"$(dirname \"$0\")/h\"\n"), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(ws, ".husky", "pre-commit"), []byte("#!/bin/sh\nnpm test\n"), 0o755))
}

// TestHuskyRunsParentScripts holds the husky rule to git: with husky 9's
// layout a commit runs .husky/pre-commit (through the shim in
// .husky/_), and that script is protected, as a hook is.
func TestHuskyRunsParentScripts(t *testing.T) {
	gitHome(t)
	ws := t.TempDir()
	gitIn(t, ws, "init", "-q")
	gitIn(t, ws, "config", "user.name", "t")
	gitIn(t, ws, "config", "user.email", "t@example.invalid")
	huskyLayout(t, ws)
	marker := filepath.Join(t.TempDir(), "ran")
	must(t, os.WriteFile(filepath.Join(ws, ".husky", "pre-commit"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	gitTry(ws, "commit", "--allow-empty", "-q", "-m", "x")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("git did not run .husky/pre-commit through the husky 9 shim: the layout does not show what git runs")
	}
	got := mustGit(t, ws, DefaultProtected())
	if !slices.ContainsFunc(got, func(p string) bool { return p == ".husky" || p == ".husky/pre-commit" }) {
		t.Errorf("git runs .husky/pre-commit, not protected: %q", got)
	}
}

// TestGitEnclosingRepositoryAttack: the workspace is a directory of a
// larger repository (a package of a monorepo), whose configuration, out
// of the run's reach, names hooks, an include or a command inside the
// workspace (husky installed for a subdirectory sets core.hooksPath to
// frontend/.husky/_). Git run anywhere in the repository, the workspace
// included, uses them; the look read only the repositories inside the
// workspace. The control, with git's paths out of the protected list,
// shows the write reaching the host; with the default list the files are
// protected.
func TestGitEnclosingRepositoryAttack(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	parent := filepath.Dir(f.ws)
	t.Cleanup(func() { os.RemoveAll(filepath.Join(parent, ".git")) })
	layouts := []struct {
		name, key, value, target string
	}{
		{"core.hooksPath", "core.hooksPath", "ws/hooks", "hooks/pre-commit"},
		{"core.fsmonitor", "core.fsmonitor", "./ws/tools/watch.sh", "tools/watch.sh"},
		{"include.path", "include.path", "../ws/shared.gitconfig", "shared.gitconfig"},
		{"a .git file above naming a repository inside", "", "", "inner.git/hooks/pre-commit"},
	}
	for _, l := range layouts {
		for _, tc := range plantCases {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				must(t, os.RemoveAll(filepath.Join(parent, ".git")))
				ents, _ := os.ReadDir(f.ws)
				for _, e := range ents {
					must(t, os.RemoveAll(filepath.Join(f.ws, e.Name())))
				}
				target := filepath.Join(f.ws, l.target)
				must(t, os.MkdirAll(filepath.Dir(target), 0o755))
				if l.key == "" {
					gitdirLayout(t, filepath.Join(f.ws, "inner.git"))
					must(t, os.WriteFile(filepath.Join(parent, ".git"), []byte("gitdir: ws/inner.git\n"), 0o644))
				} else {
					gitIn(t, parent, "init", "-q")
					gitIn(t, parent, "config", l.key, l.value)
				}
				must(t, os.WriteFile(target, []byte("#!/bin/sh\nexit 0\n"), 0o755))
				chownAll(t, f.ws)
				p := f.policy()
				tc.policy(&p)
				f.plantAttempt(t, p, "append", target, l.target, tc.planted)
			})
		}
	}
}

// TestHookManagerConfigAttack: a hook manager's shim in .git/hooks (out
// of the run's reach) runs what a file of the working tree says: the
// pre-commit framework's shim reads the file its --config names
// (.pre-commit-config.yaml), lefthook's reads lefthook.yml and runs the
// scripts under .lefthook. A run that adds a hook there (a local hook
// whose entry is any command) has it run by the user's next commit. The
// control, with git's paths out of the protected list, shows the write
// reaching the host; with the default list the files are protected.
func TestHookManagerConfigAttack(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	layouts := []struct {
		name, shim, target string
	}{
		{"pre-commit", "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\nARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)\nexec python3 -mpre_commit \"${ARGS[@]}\"\n", ".pre-commit-config.yaml"},
		{"pre-commit, another config", "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\nARGS=(hook-impl --config=ci/hooks.yaml --hook-type=pre-commit)\n", "ci/hooks.yaml"},
		{"lefthook", "#!/bin/sh\ncall_lefthook()\n{\n  lefthook \"$@\"\n}\ncall_lefthook run \"pre-commit\" \"$@\"\n", "lefthook.yml"},
		{"lefthook's scripts", "#!/bin/sh\nlefthook run \"pre-commit\" \"$@\"\n", ".lefthook/pre-commit/lint.sh"},
	}
	for _, l := range layouts {
		for _, tc := range plantCases {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				ents, _ := os.ReadDir(f.ws)
				for _, e := range ents {
					must(t, os.RemoveAll(filepath.Join(f.ws, e.Name())))
				}
				gitInit(t, f.ws, f.ws)
				must(t, os.WriteFile(filepath.Join(f.ws, ".git", "hooks", "pre-commit"), []byte(l.shim), 0o755))
				target := filepath.Join(f.ws, l.target)
				must(t, os.MkdirAll(filepath.Dir(target), 0o755))
				must(t, os.WriteFile(target, []byte("repos: []\n"), 0o644))
				chownAll(t, f.ws)
				p := f.policy()
				tc.policy(&p)
				f.plantAttempt(t, p, "append", target, l.target, tc.planted)
			})
		}
	}
}

// TestGitGlobalConfigInWorkspace: git reads its global configuration
// from $GIT_CONFIG_GLOBAL (or ~/.gitconfig, ~/.config/git/config), and a
// workspace may hold that file: a home directory as the workspace, or a
// program that points GIT_CONFIG_GLOBAL at a file of the project. A run
// that wrote core.fsmonitor there had it run by the user's git
// everywhere. The control protects only .bashrc; with git's paths
// protected the file is.
func TestGitGlobalConfigInWorkspace(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	global := filepath.Join(f.ws, "tools", "team.gitconfig")
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	for _, tc := range []struct {
		name      string
		protected []string
		planted   bool
	}{
		{"control: git's paths not protected", []string{".bashrc"}, true},
		{"default", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resetGit(t, f)
			must(t, os.MkdirAll(filepath.Dir(global), 0o755))
			must(t, os.WriteFile(global, []byte("[user]\n\tname = t\n"), 0o644))
			chownAll(t, f.ws)
			p := f.policy()
			p.Protected = tc.protected
			r := f.sandboxed(t, context.Background(), DefaultNative(), p, "append", global)
			if got := fileHas(global, "pwned")(); got != tc.planted {
				t.Errorf("the global configuration changed: %v, want %v (%q %q)", got, tc.planted, r.Stdout, trim(r.Stderr))
			}
		})
	}
}

// TestGitConfigFromEnvironment: git takes configuration from its
// environment too (GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and
// GIT_CONFIG_VALUE_n, and GIT_CONFIG_PARAMETERS, which "git -c" passes
// on), and the look read only files: a hooks path or a command set there
// named a file of the workspace that git runs and a run could write.
// Each row shows git running the file through the environment's setting
// (a marker), then wants it protected; the control, without the
// variables, protects nothing of the kind; what cannot be read is
// refused.
func TestGitConfigFromEnvironment(t *testing.T) {
	gitHome(t)
	for _, tc := range []struct {
		name   string
		env    map[string]string
		script string
		run    []string
	}{
		{"GIT_CONFIG_COUNT", map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": "./tools/watch.sh"}, "tools/watch.sh", []string{"status"}},
		{"GIT_CONFIG_PARAMETERS", map[string]string{"GIT_CONFIG_PARAMETERS": "'alias.t'='!sh ./bin/t.sh' 'user.name'='it'\\''s'"}, "bin/t.sh", []string{"t"}},
		{"GIT_CONFIG_PARAMETERS, a hooks path", map[string]string{"GIT_CONFIG_PARAMETERS": "'core.hooksPath'='.githooks'"}, ".githooks/pre-commit", []string{"commit", "--allow-empty", "-q", "-m", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			gitIn(t, ws, "init", "-q")
			gitIn(t, ws, "config", "user.name", "t")
			gitIn(t, ws, "config", "user.email", "t@example.invalid")
			marker := filepath.Join(t.TempDir(), "ran")
			script := filepath.Join(ws, tc.script)
			must(t, os.MkdirAll(filepath.Dir(script), 0o755))
			must(t, os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
			control := mustGit(t, ws, DefaultProtected())
			if slices.ContainsFunc(control, func(p string) bool { return strings.HasPrefix(tc.script, p) }) {
				t.Fatalf("control: %s protected without the environment's setting: %q", tc.script, control)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			gitTry(ws, tc.run...)
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("git did not run %s through the environment's setting: the row shows nothing", tc.script)
			}
			got := mustGit(t, ws, DefaultProtected())
			if !slices.ContainsFunc(got, func(p string) bool { return tc.script == p || strings.HasPrefix(tc.script, p+"/") }) {
				t.Errorf("git runs %s through the environment, not protected: %q", tc.script, got)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		ws := t.TempDir()
		gitIn(t, ws, "init", "-q")
		for _, env := range []map[string]string{
			{"GIT_CONFIG_COUNT": "x"},
			{"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "a.b"},
			{"GIT_CONFIG_PARAMETERS": "'unterminated"},
			{"GIT_CONFIG_PARAMETERS": "'include.path'='relative'"},
		} {
			t.Run(fmt.Sprint(env), func(t *testing.T) {
				for k, v := range env {
					t.Setenv(k, v)
				}
				if _, err := protected.Git(ws, DefaultProtected()); err == nil {
					t.Errorf("%v: no error", env)
				}
			})
		}
	})
}
