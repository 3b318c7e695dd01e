package protected

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// size is the number of entries s holds.
func size(s State) int {
	n := 0
	for _, es := range s.paths {
		n += len(es)
	}
	return n
}

// manyProtected makes a workspace of dirs protected directories with
// files entries each, as a previous run (git init vendor/rN, then files
// under its hooks) or a big checkout leaves them, and returns it with the
// protected list.
func manyProtected(t *testing.T, dirs, files int) (string, []string) {
	t.Helper()
	ws := t.TempDir()
	var paths []string
	for i := range dirs {
		p := fmt.Sprintf("r%d/.git/hooks", i)
		if err := os.MkdirAll(filepath.Join(ws, p), 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range files {
			if err := os.WriteFile(filepath.Join(ws, p, fmt.Sprintf("h%d", j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		paths = append(paths, p)
	}
	return ws, paths
}

// TestSnapshotBoundedInTotal: the look at the protected paths before and
// after every run was bounded per path (4096 entries) but not in total:
// 16,384 protected paths of 4096 entries each is 67 million entries of the
// supervisor's work and memory, outside the run's limits. The control, with
// bounds past the workspace's, shows the snapshot holding every entry of
// every path; under the bound the snapshot is refused before the run (so
// is the hard-link check), and the comparison after a run that grew the
// paths past it lists every path it did not judge.
func TestSnapshotBoundedInTotal(t *testing.T) {
	const dirs, files = 40, 30
	ws, paths := manyProtected(t, dirs, files)
	per := 2 + 1 + files // r%d and r%d/.git above, hooks, its files
	lim := Limits{Entries: 10 * per, Bytes: 1 << 20}

	t.Run("control: unbounded", func(t *testing.T) {
		s, err := Snapshot(ws, paths, Limits{Entries: 1 << 30, Bytes: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		if got := size(s); got != dirs*per || got <= lim.Entries {
			t.Fatalf("the snapshot holds %d entries; want %d, past the bound %d", got, dirs*per, lim.Entries)
		}
	})
	for _, tc := range []struct {
		name string
		lim  Limits
		want string
	}{
		{"entries", lim, "more than 330 entries"},
		{"bytes", Limits{Entries: 1 << 30, Bytes: 10 * per * entryCost}, fmt.Sprintf("%d bytes", 10*per*entryCost)},
	} {
		t.Run("refused before the run past the "+tc.name, func(t *testing.T) {
			s, err := Snapshot(ws, paths, tc.lim)
			var be *BoundError
			if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%d entries, %v; want a *BoundError saying %q", size(s), err, tc.want)
			}
			if err := HardLinked(ws, paths, tc.lim); !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("HardLinked: %v; want a *BoundError saying %q", err, tc.want)
			}
		})
	}
	t.Run("after a run past the bound, the rest is not judged", func(t *testing.T) {
		few := paths[:5]
		s, err := Snapshot(ws, few, lim)
		if err != nil {
			t.Fatalf("control, under the bound: %v", err)
		}
		if got := s.Changed(ws, few); len(got) != 0 {
			t.Fatalf("control: nothing changed, listed %v", got)
		}
		// The run fills the third path past the bound.
		for j := range lim.Entries {
			if err := os.WriteFile(filepath.Join(ws, few[2], fmt.Sprintf("x%d", j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := s.Changed(ws, few), few[2:]; !slices.Equal(got, want) {
			t.Fatalf("changed %v; want %v (the path past the bound and every one after it)", got, want)
		}
	})
}

// TestSnapshotHugeDirectory: a protected directory of more names than the
// bounds leave is not read whole, and the snapshot is refused; under a
// bound past it, it is read whole (before, a path's tree stopped quietly
// at its first 4096 entries: see TestChangePastThePathCut).
func TestSnapshotHugeDirectory(t *testing.T) {
	ws, paths := manyProtected(t, 1, 5000)
	s, err := Snapshot(ws, paths, Limits{Entries: 1 << 20, Bytes: 1 << 30})
	if want := 2 + 1 + 5000; err != nil || size(s) != want { // r0 and r0/.git above, the hooks directory, its 5000 files
		t.Fatalf("control: %d entries, %v; want %d", size(s), err, want)
	}
	var be *BoundError
	if _, err := Snapshot(ws, paths, Limits{Entries: 1000, Bytes: 1 << 30}); !errors.As(err, &be) {
		t.Fatalf("%v; want a *BoundError", err)
	}
}

// TestChangePastThePathCut: each protected path's tree was compared for
// its first 4096 entries only, cut quietly: a run that changed a hook past
// them (here h999, the last of 5000 in name order) changed a protected
// file and ProtectedChanged said nothing (this test failed so). The
// control is the change itself, seen on the host. A tree is now read
// whole within the look's bounds in total, and past them is not judged.
func TestChangePastThePathCut(t *testing.T) {
	ws, paths := manyProtected(t, 1, 5000)
	s, err := Snapshot(ws, paths, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(ws, paths[0], "h999")
	if err := os.WriteFile(last, []byte("planted"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(last); err != nil || string(b) != "planted" {
		t.Fatalf("control: the change is not on the host: %q %v", b, err)
	}
	if got := s.Changed(ws, paths); !slices.Equal(got, paths) {
		t.Errorf("changed %v; want %v", got, paths)
	}
}

// TestSnapshotTooDeep: a protected tree deeper than the look descends
// (a run can nest directories under a protected path it made) was cut
// quietly at 16 levels; what lies below is not judged now: the snapshot
// is refused before a run, and after one the path is listed.
func TestSnapshotTooDeep(t *testing.T) {
	ws, paths := manyProtected(t, 1, 1)
	deep := filepath.Join(ws, paths[0])
	for range maxProtectedDepth + 2 {
		deep = filepath.Join(deep, "d")
	}
	s, err := Snapshot(ws, paths, Limits{})
	if err != nil {
		t.Fatalf("control, shallow: %v", err)
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := s.Changed(ws, paths); !slices.Equal(got, paths) {
		t.Errorf("changed %v; want %v", got, paths)
	}
	var be *BoundError
	if _, err := Snapshot(ws, paths, Limits{}); !errors.As(err, &be) || !strings.Contains(err.Error(), "levels") {
		t.Errorf("snapshot of the deep tree: %v; want a *BoundError naming the levels", err)
	}
}
