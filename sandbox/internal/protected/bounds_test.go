package protected

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLookBounded: the look at git's configuration runs on the host,
// outside any run's limits, before every run, over files a run may have
// written (the config of a repository the run made, git init vendor/x,
// which nothing protects). A 1 MiB configuration of aliases naming files
// gave 59,000 protected paths and 5 s of the supervisor's CPU per file,
// and include files multiplied it; many repositories multiplied the
// leaves. Each is now refused at its bound, quickly; the control, the
// same layouts under the bounds, is read whole.
func TestLookBounded(t *testing.T) {
	t.Setenv("GIT_CONFIG_SYSTEM", os.DevNull)
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	aliases := func(bytes int) string {
		var b strings.Builder
		b.WriteString("[alias]\n")
		for i := 0; b.Len() < bytes; i++ {
			fmt.Fprintf(&b, "a%d = !x/%d\n", i, i)
		}
		return b.String()
	}
	repo := func(t *testing.T, config string, includes int) string {
		t.Helper()
		ws := t.TempDir()
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755))
		var inc strings.Builder
		for i := range includes {
			name := fmt.Sprintf("inc%d", i)
			must(os.WriteFile(filepath.Join(ws, name), []byte(config), 0o644))
			fmt.Fprintf(&inc, "[include]\n\tpath = ../%s\n", name)
		}
		if includes == 0 {
			inc.WriteString(config)
		}
		must(os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(inc.String()), 0o644))
		return ws
	}
	list := []string{".git/hooks", ".git/config"}
	for _, tc := range []struct {
		name    string
		ws      func(t *testing.T) string
		nested  bool
		refused string
	}{
		{"control: aliases under the bound", func(t *testing.T) string { return repo(t, aliases(64<<10), 0) }, false, ""},
		{"1 MiB of aliases naming files", func(t *testing.T) string { return repo(t, aliases(1<<20-64), 0) }, false, "protected paths"},
		{"includes of configuration past the byte bound", func(t *testing.T) string { return repo(t, "[core]\n#"+strings.Repeat("x", 1<<20-64)+"\n", 20) }, false, "bytes of git configuration"},
		{"control: a few nested repositories", func(t *testing.T) string { return nestedRepos(t, 10) }, true, ""},
		{"many nested repositories", func(t *testing.T) string { return nestedRepos(t, maxProtectedPaths/len(leaves)+10) }, true, "protected paths"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := tc.ws(t)
			got, err := Git(ws, list)
			if err == nil && tc.nested {
				got, err = Nested(ws, got, Bounds{Entries: 1 << 20, Depth: 64})
			}
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("control: %v", err)
				}
				return
			}
			var be *BoundError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%d paths, %v; want refused saying %q", len(got), err, tc.refused)
			}
		})
	}
}

// nestedRepos makes a workspace holding n repositories, each a .git
// directory.
func nestedRepos(t *testing.T, n int) string {
	t.Helper()
	ws := t.TempDir()
	for i := range n {
		if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("r%d", i), ".git", "hooks"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}
