package runstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miniopenclaw/tool/agent"
)

// stateOf returns a RunState read from a document written by hand in
// the format agent writes, resealed by agent itself.
func stateOf(t *testing.T) *agent.RunState {
	t.Helper()
	// A state round-trips through ParseRunState only with a valid
	// checksum, so make one from a document agent accepts.
	var st agent.RunState
	doc := sealed(t)
	if err := st.UnmarshalJSON(doc); err != nil {
		t.Fatal(err)
	}
	return &st
}

// The store keeps runs 0600, refuses ids that are not ids, says when a
// run is not saved, refuses a new run when full of fresh runs, and makes
// room by removing runs older than MaxAge.
func TestStoreBounds(t *testing.T) {
	s := Store{Dir: filepath.Join(t.TempDir(), "runs"), Max: 2, MaxAge: time.Hour}
	st := stateOf(t)
	a, b, c := NewID(), NewID(), NewID()
	for _, id := range []string{a, b} {
		if err := s.Save(id, st); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(s.file(a)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("saved run: %v, %v; want mode 0600", fi, err)
	}
	if err := s.Save(a, st); err != nil {
		t.Errorf("replacing a run in a full store: %v", err)
	}
	if err := s.Save(c, st); err == nil || !strings.Contains(err.Error(), "the most it keeps") {
		t.Errorf("a third run in a store of 2: %v", err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(s.file(b), old, old)
	if err := s.Save(c, st); err != nil {
		t.Errorf("after b aged: %v", err)
	}
	if _, err := s.Load(b); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load of the aged-out run: %v", err)
	}
	if _, err := s.Load(c); err != nil {
		t.Errorf("Load: %v", err)
	}
	for _, id := range []string{"../x", "", strings.Repeat("A", 24)} {
		if err := s.Save(id, st); err == nil {
			t.Errorf("Save(%q) succeeded", id)
		}
	}
	if err := s.Delete(c); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(c); err != nil {
		t.Errorf("deleting a deleted run: %v", err)
	}
	// An oversized file is refused without being read whole.
	big := make([]byte, agent.MaxRunStateBytes+10)
	os.WriteFile(s.file(a), big, 0o600)
	if _, err := s.Load(a); !errors.Is(err, agent.ErrBadRunState) {
		t.Errorf("Load of an oversized run: %v", err)
	}
	// A directory others may write is refused.
	os.Chmod(s.Dir, 0o777)
	if err := s.Save(a, st); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("Save into a world-writable directory: %v", err)
	}
}
