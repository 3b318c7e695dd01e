package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectedHardLinkAttack: a protected file with a second name in the
// workspace (a hard link, made by the user or by a tool outside any run)
// is the same file under a name the protected list does not hold. A run
// that binds its workspace directly (a streamed run, a policy without the
// write budget, and every container run) writes the other name, and so
// the protected file, in place: the read-only bind over .git/config does
// not cover its other name. Through the write budget's overlay the write
// copies the name up and the apply step renames a new file onto it, so
// the protected file stays as it was. The control is the attack with the
// workspace bound directly before the defence; with it such a run is
// refused before anything runs, naming the file.
func TestProtectedHardLinkAttack(t *testing.T) {
	gitHome(t)
	f := newFixture(t)
	setup := func(t *testing.T) (config, other string) {
		t.Helper()
		resetGit(t, f)
		gitdirLayout(t, filepath.Join(f.ws, ".git"))
		config = filepath.Join(f.ws, ".git", "config")
		other = filepath.Join(f.ws, unique("notes"))
		must(t, os.Link(config, other))
		t.Cleanup(func() { os.Remove(other) })
		chownAll(t, f.ws)
		return config, other
	}
	t.Run("through the write budget's overlay the protected file stays", func(t *testing.T) {
		config, other := setup(t)
		r := f.sandboxed(t, context.Background(), DefaultNative(), f.policy(), "append", other)
		if !strings.HasPrefix(string(r.Stdout), "OK") {
			t.Fatalf("the run could not write its own file: %q %q", r.Stdout, trim(r.Stderr))
		}
		if fileHas(config, "pwned")() {
			t.Error(".git/config changed through its other name, through the overlay")
		}
	})
	t.Run("workspace bound directly", func(t *testing.T) {
		config, other := setup(t)
		p := f.policy()
		p.Without = []Layer{LayerWriteBudget}
		r, err := DefaultNative().Run(context.Background(), p, []string{f.attacker, "append", other}, nil)
		if err == nil {
			t.Errorf("the run ran (%q %q); want it refused for the protected file's second name", r.Stdout, trim(r.Stderr))
		} else if !strings.Contains(err.Error(), "hard link") {
			t.Errorf("%v; want the refusal to name the hard link", err)
		}
		if fileHas(config, "pwned")() {
			t.Error(".git/config changed through its other name")
		}
	})
}
