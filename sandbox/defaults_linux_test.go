package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDefaultsAreCopiesInARun spoils each default a run reads on the host
// (as a package sharing the process could) and checks a real run with a
// zero or default policy: the defaults it applies are the package's own.
func TestDefaultsAreCopiesInARun(t *testing.T) {
	f := newFixture(t)
	t.Run("SystemReadOnly", func(t *testing.T) {
		// Were the list shared, Landlock would let the run read nothing
		// of /usr and the echo below could not even start.
		ro := SystemReadOnly()
		for i := range ro {
			ro[i] = "/nonexistent"
		}
		r, err := Run(context.Background(), Policy{}, "echo", "ok")
		if err != nil || !r.OK() || string(r.Stdout) != "ok\n" {
			t.Fatalf("echo after spoiling SystemReadOnly: %v %+v %q", err, r, r.Stderr)
		}
	})
	t.Run("DefaultEnv", func(t *testing.T) {
		want := slices.Clone(DefaultEnv()) // a snapshot, whatever DefaultEnv returns
		env := DefaultEnv()
		env[0] = "PATH=/nowhere"
		r, err := Run(context.Background(), Policy{}, "/usr/bin/env")
		if err != nil || !r.OK() {
			t.Fatalf("env: %v %+v", err, r)
		}
		if got := strings.Fields(string(r.Stdout)); !slices.Equal(got, want) {
			t.Fatalf("the run's environment %q, want %q", got, want)
		}
	})
	t.Run("RequiredLayers", func(t *testing.T) {
		want := slices.Clone(RequiredLayers())
		req := RequiredLayers()
		for i := range req {
			req[i] = LayerCgroup
		}
		r, err := Run(context.Background(), Policy{}, "true")
		if err != nil || !r.OK() {
			t.Fatalf("true: %v %+v", err, r)
		}
		for _, l := range want {
			if !slices.Contains(r.Layers, l) {
				t.Errorf("the run's layers %v lack %s", r.Layers, l)
			}
		}
	})
	t.Run("DefaultProtected", func(t *testing.T) {
		prot := DefaultProtected()
		for i := range prot {
			prot[i] = "elsewhere"
		}
		must(t, os.MkdirAll(filepath.Join(f.ws, ".vscode"), 0o755))
		must(t, os.Chown(filepath.Join(f.ws, ".vscode"), DefaultUID, DefaultUID))
		p := f.policy()
		p.Env = DefaultEnv()
		if _, err := Run(context.Background(), p, "sh", "-c", "echo y > .vscode/settings.json"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(f.ws, ".vscode", "settings.json")); err == nil {
			t.Fatal("the run wrote into .vscode after DefaultProtected's copy was spoiled")
		}
	})
}
