package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHomeWorkspaceDotfilesAttack: the default protected list names the
// shell's startup files and git's configuration because a workspace may
// be a home directory (or a project holding dotfiles), yet it left out
// what runs code on the host just as surely: ~/.ssh (authorized_keys
// gives a way in, config's ProxyCommand and rc run commands), zsh's
// .zshenv (read by every zsh, scripts included), .zprofile, .zlogin,
// bash's .bash_login and .bash_logout, git's XDG configuration
// (.config/git/config: core.fsmonitor), ~/.local/bin (ahead of /usr/bin
// in a user's PATH: a planted git is the next git run), the user's
// systemd units and autostart entries, and the configurations whose
// credential helpers are commands (.kube/config, .aws/config,
// .docker/config.json). The control protects only .bashrc and the run
// changes each on the host; with the default list each is read-only.
func TestHomeWorkspaceDotfilesAttack(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	for _, rel := range []string{
		".ssh/authorized_keys", ".ssh/config", ".ssh/rc", ".zshenv", ".zprofile", ".zlogin", ".bash_login", ".bash_logout",
		".config/git/config", ".local/bin/git", ".config/systemd/user/agent.service", ".config/autostart/agent.desktop",
		".kube/config", ".aws/config", ".docker/config.json", ".config/fish/config.fish", ".pam_environment",
	} {
		for _, tc := range []struct {
			name      string
			protected []string
			planted   bool
		}{
			{"control: only .bashrc protected", []string{".bashrc"}, true},
			{"default", nil, false},
			{"default, workspace bound directly", nil, false},
		} {
			t.Run(rel+"/"+tc.name, func(t *testing.T) {
				ents, _ := os.ReadDir(f.ws)
				for _, e := range ents {
					must(t, os.RemoveAll(filepath.Join(f.ws, e.Name())))
				}
				target := filepath.Join(f.ws, rel)
				must(t, os.MkdirAll(filepath.Dir(target), 0o755))
				must(t, os.WriteFile(target, []byte("original\n"), 0o644))
				chownAll(t, f.ws)
				p := f.policy()
				p.Protected = tc.protected
				if strings.Contains(tc.name, "directly") {
					p.Without = []Layer{LayerWriteBudget}
				}
				f.plantAttempt(t, p, "append", target, rel, tc.planted)
			})
		}
	}
}
