package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miniopenclaw/tool/sandbox/internal/protected"
)

// TestProtectedSnapshotBoundedAttack: the supervisor's look at the
// protected paths before and after each run was bounded per path (4096
// entries), not in total: many protected directories, each with many
// entries (made by a previous run, or a checkout), were read whole on the
// host, outside the run's limits. With a bound in total (set low here
// through the backend's test hook), a workspace past it is refused before
// the command starts, and a run that grows a protected path past it gets
// that path and every one after it listed in ProtectedChanged, not judged.
// The controls are the same runs under a bound past the workspace.
func TestProtectedSnapshotBoundedAttack(t *testing.T) {
	requireSandbox(t)
	ws, err := os.MkdirTemp("", "clawtool-snapshot-")
	must(t, err)
	defer os.RemoveAll(ws)
	must(t, os.Chmod(ws, 0o755))
	var paths []string
	for i := range 20 {
		p := fmt.Sprintf("p%d", i)
		for j := range 20 {
			must(t, os.MkdirAll(filepath.Join(ws, p), 0o755))
			must(t, os.WriteFile(filepath.Join(ws, p, fmt.Sprint(j)), nil, 0o644))
		}
		paths = append(paths, p)
	}
	chownAll(t, ws)
	ctx := context.Background()
	low := &nativeHooks{snapshot: protected.Limits{Entries: 200}}
	high := &nativeHooks{snapshot: protected.Limits{Entries: 1 << 20}}
	marker := filepath.Join(ws, "ran")

	t.Run("refused before the run", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			hooks *nativeHooks
		}{{"control: under the bound", high}, {"past the bound", low}} {
			os.Remove(marker)
			n := newTestNative(t, NativeOptions{}, tc.hooks)
			r, err := runOn(n, ctx, Policy{Workspace: ws, Protected: paths}, "sh", "-c", ": > ran")
			n.Close()
			_, statErr := os.Stat(marker)
			if tc.hooks == high {
				if err != nil || !r.OK() || statErr != nil {
					t.Fatalf("%s: %v %+v, marker %v", tc.name, err, r, statErr)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "more than 200 entries") {
				t.Fatalf("%s: %v; want the run refused naming the bound", tc.name, err)
			}
			if statErr == nil {
				t.Fatalf("%s: the refused run's command ran", tc.name)
			}
		}
	})
	t.Run("grown past the bound by the run", func(t *testing.T) {
		few := []string{"p0", ".vscode", "p1"} // 21 + 0 + 21 entries before
		grow := "mkdir .vscode && for i in $(seq 300); do : > .vscode/f$i; done"
		for _, tc := range []struct {
			name  string
			hooks *nativeHooks
			want  []string
		}{{"control: under the bound", high, []string{".vscode"}}, {"past the bound", low, []string{".vscode", "p1"}}} {
			os.RemoveAll(filepath.Join(ws, ".vscode"))
			n := newTestNative(t, NativeOptions{}, tc.hooks)
			p := Policy{Workspace: ws, Protected: few, Without: []Layer{LayerWriteBudget}}
			r, err := runOn(n, ctx, p, "sh", "-c", grow)
			n.Close()
			if err != nil || !r.OK() {
				t.Fatalf("%s: %v %+v", tc.name, err, r)
			}
			if !slices.Equal(r.ProtectedChanged, tc.want) {
				t.Errorf("%s: ProtectedChanged %v; want %v", tc.name, r.ProtectedChanged, tc.want)
			}
		}
		os.RemoveAll(filepath.Join(ws, ".vscode"))
	})
}
